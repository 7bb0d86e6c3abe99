// fxfuse kernel template: the chain's epilogue alone, over a product already in memory.
//
// For a chain the op has no fast fused kernel for (codegen::isFastVariant false), the runtime
// computes the product with cuBLAS (at::mm / at::bmm with fp32 output: fp32 accumulation, as
// the fused kernels) and runs this kernel once over it: every output of the chain in one pass,
// instead of one ATen kernel (plus dtype conversions) per epilogue op. That is what Inductor's
// unfused graph costs (cuBLAS + one fused pointwise kernel), so a chain the planner fused at
// one size (a dynamic M traced at decode size) is not slower than unfused at another.
//
// Included after the generated preamble (kernel_abi.h + hooks). Uses fx_epilogue2(p, b, m, n,
// acc0, acc1) (n even; stores every output of (m, n) and (m, n + 1) when n + 1 < N).
// The product: p.in[FX_ACC_SLOT], fp32, element (b, m, n) at b * sb + m * sm + n (sn == 1).
// Launch (GridPolicy::Elementwise): block = FX_THREADS, a 1-D grid-stride loop over column pairs.
#ifndef FX_ACC_SLOT
#error "epilogue_pointwise.cuh needs FX_ACC_SLOT (the input slot of the fp32 product)"
#endif

extern "C" __global__ void __launch_bounds__(FX_THREADS) FX_KERNEL_NAME(const __grid_constant__ fxfuse::FxParams p) {
  const fxfuse::FxOperand& accOp = p.in[FX_ACC_SLOT];
  const float* acc = static_cast<const float*>(accOp.ptr);
  const long long pairsPerRow = (p.N + 1) / 2;
  const long long pairs = p.B * p.M * pairsPerRow;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < pairs;
       i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / pairsPerRow;  // b * M + m
    const long long n = (i - row * pairsPerRow) * 2;
    const long long b = row / p.M, m = row - b * p.M;
    const float* a = acc + b * accOp.sb + m * accOp.sm + n;
    const float a0 = __ldg(a);
    const float a1 = n + 1 < p.N ? __ldg(a + 1) : 0.0f;
    fx_epilogue2(p, b, m, n, a0, a1);
  }
}
