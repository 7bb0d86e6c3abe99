// cublas_share.cpp — see cublas_share.h.
#include "codegen/cublas_share.h"

#include <algorithm>

#include "codegen/hopper_tile_choice.h"

namespace fxfuse {
namespace codegen {

namespace {
struct OutputTile {
  long long rows, cols;  // of the row-major M x N output
};

// The tiles of the nvjet kernels cuBLAS (torch 2.11's, CUDA 12.x) ran for bf16 `x @ w` on the H200
// at 55 shapes of 704-12288 rows, N = 1152-28672, K = 4096-14336 (bench/cublas_tiles.py,
// bench/RESULTS.md Run AV calls 1, 2 and 4, 2026-12-03): the kernel names give the tile as N-extent
// x M-extent (cuBLAS's column-major problem is w^T x^T), e.g. nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA
// covers 128 rows by 256 columns. The largest share over these five tiles is within 0.01 of the
// share of the tile cuBLAS ran (counted over all the SMs) at 49 of 55 shapes (`bench/cublas_tiles.py
// --check`); the others: two under one round (896 and 704 rows, counted 0 below), 8192^3 and 8192 x
// 14336 x 8192 (0.985 counted, 0.955 run), and at 1088 rows cuBLAS's 160 x 128 tile (1088 x 14336 x
// 14336: 0.96 run, 0.90 counted; 1088 x 14336 x 6144: 0.82 and 0.77). With 160 x 128 in the set
// the count is off at five more shapes (cuBLAS picks it at 1088 rows only). A split-K kernel (2048
// x 14336 x 1152) is not counted.
constexpr OutputTile kCublasTiles[] = {{128, 256}, {128, 320}, {192, 192}, {256, 160}, {192, 128}};
}  // namespace

double cublasWorkShare(long long M, long long N, int num_sms) {
  if (M < 1 || N < 1) return 0.0;
  const long long sms = std::max(1, num_sms);
  double best = 0;
  long long best_tiles = 0;
  for (const OutputTile& t : kCublasTiles) {
    long long tiles = 0;
    const double share = sm90::slotShare(M, N, 1, t.rows, t.cols, num_sms, &tiles);
    if (share > best) {
      best = share;
      best_tiles = tiles;
    }
  }
  // Fewer tiles than SMs: what cuBLAS does there is not modelled. It split K at 66 tiles (2048 x
  // 14336 x 1152: 192 x 192 on 132 CTAs) and ran one partial round at 112 and 128 (896 x 14336 x
  // 4096, 704 x 4096 x 4096), rows the refusal does not weigh against cuBLAS.
  return best_tiles >= sms ? best : 0.0;
}

}  // namespace codegen
}  // namespace fxfuse
