// cublas_share.cpp — see cublas_share.h.
#include "codegen/cublas_share.h"

#include <algorithm>

namespace fxfuse {
namespace codegen {

namespace {
struct OutputTile {
  long long rows, cols;  // of the row-major M x N output
};

// The tiles of the nvjet kernels cuBLAS (torch 2.11's, CUDA 12.x) ran for bf16 `x @ w` on the H200
// at 32 shapes of 704-12288 rows, N = 1152-28672, K = 4096-14336 (bench/cublas_tiles.py,
// bench/RESULTS.md Run AV call 1, 2026-12-03): the kernel names give the tile as N-extent x
// M-extent (cuBLAS's column-major problem is w^T x^T), e.g. nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA
// covers 128 rows by 256 columns. The largest share over these tiles was the share of the tile
// cuBLAS ran at 30 of the 32 shapes (the others: 8192^3, 0.955 against 0.985, and a split-K
// kernel at 2048 x 14336 x 1152).
constexpr OutputTile kCublasTiles[] = {{128, 256}, {128, 320}, {192, 192}, {256, 160}, {192, 128}};
}  // namespace

double cublasWorkShare(long long M, long long N, int num_sms) {
  const long long sms = std::max(1, num_sms);
  double best = 0;
  long long best_tiles = 0;
  for (const OutputTile& t : kCublasTiles) {
    const long long tiles = ((M + t.rows - 1) / t.rows) * ((N + t.cols - 1) / t.cols);
    const long long rounds = (tiles + sms - 1) / sms;
    const double share = double(M) * double(N) / (double(rounds) * double(sms) * double(t.rows * t.cols));
    if (share > best) {
      best = share;
      best_tiles = tiles;
    }
  }
  // Fewer tiles than SMs: cuBLAS splits K instead (2048 x 14336 x 1152 ran 66 tiles of 192x192 on
  // 132 CTAs, a split-K kernel), which this count does not model.
  return best_tiles >= sms ? best : 0.0;
}

}  // namespace codegen
}  // namespace fxfuse
