// hopper_tile_choice.h — which tile (and split-K) the Hopper kernel (kernels/sm90_wgmma_gemm.cuh)
// runs for a problem size: the planner's heuristic, measured per shape class on the H200. The
// kernel's host contract (GemmConfig, tensor maps, launch geometry) is tma_desc.h.
#pragma once

#include "codegen/tma_desc.h"

namespace fxfuse {
namespace sm90 {

// Tiles of c over M x N x batch (partial ones included).
long long tileCount(long long M, long long N, long long batch, const GemmConfig& c);

// Rounds of num_sms tiles those tiles take on a persistent grid (num_sms < 1 counts as 1).
long long roundsOfTiles(long long M, long long N, long long batch, const GemmConfig& c, int num_sms);

// The real outputs' share of the area of the rounds of num_sms `rows` x `cols` tiles over M x N x
// batch (num_sms < 1 counts as 1): 1 when every slot of every round holds real outputs. Also for
// tiles that are not the Hopper kernel's (cublasWorkShare). `tiles`, if given, gets their count.
double slotShare(long long M, long long N, long long batch, long long rows, long long cols, int num_sms,
                 long long* tiles = nullptr);

// The share of the tile slots' work that is real: the real outputs over the area of c's rounds of
// num_sms tiles, times c's throughput on whole tiles relative to 128x256 cooperative (measured at
// K = 4096, hopper_tile_choice.cpp). 1: every slot of every round busy at 128x256's rate.
double tileWorkShare(long long M, long long N, long long batch, const GemmConfig& c, int num_sms);

// The work share the refusals judge for `chosen`, chooseConfig's tile: tileWorkShare, but where
// chosen is a 128-row tile with a partial last row tile that won a slot-area tie against 64x256
// ping-pong (whose 64-row tiles are whole) at 257-1024 rows of one matrix, the larger of the two
// shares. Until Run AR that tie went to 64x256; the tie-break now takes the tile measured faster,
// which tileThroughput (fitted from 1025 rows) rates 3 % lower, and the refusals would otherwise
// refuse shapes they took before for a tile that runs faster (320 x 3072 x 14336: 128x128
// ping-pong 7-9 % ahead of the unfused path, 64x256 2.5 %; bench/RESULTS.md Run AR). Likewise from
// 1025 rows of one matrix whose rows are whole 128-byte lines (N % 64 == 0) at K >= 4096 where
// chosen is 128x128 ping-pong in 64x256's rounds: chooseConfig takes it there where it measured at
// least as fast as 64x256 (a residual at K = 4096-14336, 1025-1535 rows; a partial 256-column tile
// within 2 % either way, Runs AH-AJ and AV call 6), and the throughput fitted at K = 4096 rates it
// 3 % lower: judged as it was, the cuBLAS-relative refusal (Run AV) refused 4096 x 14336 x 14336 and
// 8192 x 14336 x 8192 with the residual, and 2816 x 11008 x 9344 and 2496 x 14336 x 13440, where it
// ran 3.8-7.6 % ahead of the unfused path. (At K <= 2048, where it also takes 64x256's place, its
// own share stays judged, as measured since Run AM.)
double judgedWorkShare(long long M, long long N, long long K, long long batch, const GemmConfig& chosen,
                       int num_sms);

// What the epilogue costs per output beyond its arithmetic, as the tile choice weighs it. A
// full-size residual (an M x N input of the epilogue) is the one such cost measured to move the
// choice: a cooperative tile runs its epilogue, residual reads included, with both consumers off
// the tensor cores once per round; ping-pong runs it under the other consumer's MMAs
// (tileFillingTheSms, Run AN).
enum class EpilogueLoad { Light, ReadsResidual };

// Whether c is 128x128 cooperative, the tile of the one-round rules below 257 rows (chooseConfig).
bool isSquareCooperative(const GemmConfig& c);
// The longest K at which that tile was measured winning in one round over `rows` rows of one
// matrix: two row tiles (256 rows) to K = 14336, a lone one to K = 8192 (bench/RESULTS.md Run AU).
long long squareCooperativeMaxK(long long rows);

// Config choice: ping-pong 64x256 from 1025 rows (M x batch) where its tiles fill the SMs (for one
// matrix: a 128-row tile at a partial 256-column tile (64x256 where 128x128 takes as many rounds,
// 128x256 where N is not a multiple of 64, both at K >= 4096), 128x256 where it takes half
// 64x256's rounds and at most two, or three or four at K = 4096-8192 with whole 128-row tiles);
// 64x128 ping-pong for N <= 128 (from 1025 rows of one matrix, 128x128 where it
// fits one round and 64x128 does not); from 1025 rows of one matrix at K <= 3072 with whole 256-column
// tiles, 64x128 where its work share is the larger; otherwise the tile (128x256, 128x128, 64x256 or 64x128; up to 256 rows
// without 128x128, from 257 rows of one matrix 64x128's slots weighted 6/5) that fills the SMs'
// rounds best (at 257-1024 rows of one matrix of whole 128-row tiles, K <= 4096, 128x128 before
// 128x256 where 128x256 takes three rounds or more, or two at K = 1024-3072 or, with a residual,
// at K = 1024-4096),
// below 257 rows at K >= 8192 128x128
// cooperative where only it fits one round of at least 96 tiles; from 1025 rows of one
// matrix at K <= 2048 128x128 ping-pong in place of 64x256 (whole 128-row tiles). No cluster (measured no faster,
// bench/sm90/NOTES.md). num_sms: the device's multiprocessor count (132 on H100/H200 SXM); epilogue:
// what the epilogue reads beside the accumulator (EpilogueLoad; the planner passes its spec's,
// Light is for callers without a spec, e.g. the work-share queries of the bench tools).
GemmConfig chooseConfig(long long M, long long N, long long K, long long batch, int num_sms,
                        EpilogueLoad epilogue = EpilogueLoad::Light);

// Split-K (FX_SPLIT_K): a 64x128 tile with one consumer, shared along K by a cluster of split_k CTAs.
// ks: 2 or 4. 7 ring stages: the 32 KB partial buffer takes the eighth (dynSmemBytes).
GemmConfig splitKConfig(int ks);

// The split-K cluster size the heuristic takes for this problem: 2 where one matrix's 32 or more
// 64x128 tiles, doubled, fit in one round of the SMs and either one 64-row tile (48-64 rows) has a long K
// (measured at M = 64, K = 14336, N = 4096) or a narrow N (128 or 256) has 32-66 tiles at
// K >= 4096 (measured at 1024-4096 rows, K = 4096 and 14336); 1 (no split-K) elsewhere.
int splitKForFewTiles(long long M, long long N, long long K, long long batch, int num_sms);

}  // namespace sm90
}  // namespace fxfuse
