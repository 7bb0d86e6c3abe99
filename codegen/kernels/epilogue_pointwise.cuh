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
// Included after the generated preamble (kernel_abi.h + hooks). Uses fx_epilogue2(p, b, m, n,
// acc0, acc1) (n even; stores every output of (m, n) and (m, n + 1) when n + 1 < N).
// The product: p.in[FX_ACC_SLOT], element (b, m, n) at b * sb + m * sm + n (sn == 1), read as
// float by FX_ACC_LOAD(ptr, index) (the generator picks fx_ld_f32 / fx_ld_bf16 / fx_ld_f16 by
// the mm value's dtype).
// Launch (GridPolicy::Elementwise): block = FX_THREADS, a 1-D grid-stride loop over column pairs.
#if !defined(FX_ACC_SLOT) || !defined(FX_ACC_LOAD)
#error "epilogue_pointwise.cuh needs FX_ACC_SLOT and FX_ACC_LOAD (the product's slot and loader)"
#endif

extern "C" __global__ void __launch_bounds__(FX_THREADS) FX_KERNEL_NAME(const __grid_constant__ fxfuse::FxParams p) {
  const fxfuse::FxOperand& accOp = p.in[FX_ACC_SLOT];
  const long long pairsPerRow = (p.N + 1) / 2;
  const long long pairs = p.B * p.M * pairsPerRow;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < pairs;
       i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / pairsPerRow;  // b * M + m
    const long long n = (i - row * pairsPerRow) * 2;
    const long long b = row / p.M, m = row - b * p.M;
    const long long at = b * accOp.sb + m * accOp.sm + n;
    const float a0 = FX_ACC_LOAD(accOp.ptr, at);
    const float a1 = n + 1 < p.N ? FX_ACC_LOAD(accOp.ptr, at + 1) : 0.0f;
    fx_epilogue2(p, b, m, n, a0, a1);
  }
}
