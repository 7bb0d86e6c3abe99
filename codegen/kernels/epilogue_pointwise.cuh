// fxfuse kernel template: the chain's epilogue alone, over a product already in memory.
//
// For a chain the op has no fast fused kernel for (codegen::isFastVariant false), the runtime
// computes the product with cuBLAS (fp32 accumulation, as the fused kernels; written in the mm
// value's dtype when that is 16-bit, else fp32: runtime chainProduct) and runs this kernel once
// over it: every output of the chain in one pass,
// instead of one ATen kernel (plus dtype conversions) per epilogue op. That is what Inductor's
// unfused graph costs (cuBLAS + one fused pointwise kernel), so a chain the planner fused at
// one size (a dynamic M traced at decode size) is not slower than unfused at another.
//
// Included after the generated preamble (kernel_abi.h + hooks). Uses the pair hooks: fx_epilogue2
// (any pair: n even, stores (m, n + 1) only when n + 1 < N) and, where fx_epilogue2_vec_ok(p)
// holds and the pair is whole, fx_epilogue_cols (the values that depend on (b, n) only: a bias,
// a column scale) and the branch-free fx_epilogue2_vec.
// The product: p.in[FX_ACC_SLOT], element (b, m, n) at b * sb + m * sm + n (sn == 1), read as
// float by FX_ACC_LOAD(ptr, index) (the generator picks fx_ld_f32 / fx_ld_bf16 / fx_ld_f16 by
// the mm value's dtype).
// Launch (GridPolicy::Elementwise): block = FX_THREADS; grid.x strides over a row's column pairs,
// grid.y over the B * M rows; a thread keeps its column pair and walks rows. Why: with one flat
// index over all pairs (until Run AE) each pair paid two 64-bit divisions to find its row and
// matrix and its own bias loads, and at 256 x 14336 the kernel ran at half the speed of ATen's
// SiLU (0.014 against 0.0067 ms, bench/RESULTS.md Run AE); here a thread finds (b, m) once, loads
// its columns' values once per matrix, and divides again only when its row stride crosses one.
#if !defined(FX_ACC_SLOT) || !defined(FX_ACC_LOAD)
#error "epilogue_pointwise.cuh needs FX_ACC_SLOT and FX_ACC_LOAD (the product's slot and loader)"
#endif

extern "C" __global__ void __launch_bounds__(FX_THREADS) FX_KERNEL_NAME(const __grid_constant__ fxfuse::FxParams p) {
  fx_grid_dependency_wait();  // launched as a programmatic dependent of the cuBLAS product
  const fxfuse::FxOperand& accOp = p.in[FX_ACC_SLOT];
  const long long pairsPerRow = (p.N + 1) / 2;
  const long long rows = p.B * p.M;
  const bool vecOk = fx_epilogue2_vec_ok(p);
  for (long long pair = (long long)blockIdx.x * blockDim.x + threadIdx.x; pair < pairsPerRow;
       pair += (long long)gridDim.x * blockDim.x) {
    const long long n = pair * 2;
    const bool vec = vecOk && n + 1 < p.N;  // uniform but for the last pair of an odd N
    long long row = blockIdx.y;
    long long b = row / p.M, m = row - b * p.M;
    long long colsOf = -1;  // the matrix c0, c1 hold the column values of
    FxCol c0{}, c1{};
    for (; row < rows; row += gridDim.y) {
      const long long at = b * accOp.sb + m * accOp.sm + n;
      const float a0 = FX_ACC_LOAD(accOp.ptr, at);
      const float a1 = n + 1 < p.N ? FX_ACC_LOAD(accOp.ptr, at + 1) : 0.0f;
      if (vec) {
        if (b != colsOf) {
          fx_epilogue_cols(p, b, n, c0, c1);
          colsOf = b;
        }
        fx_epilogue2_vec(p, b, m, n, a0, a1, c0, c1);
      } else {
        fx_epilogue2(p, b, m, n, a0, a1);
      }
      m += gridDim.y;
      if (m >= p.M) {  // the row stride crossed into a later matrix of the batch
        b += m / p.M;
        m %= p.M;
      }
    }
  }
}
