"""Host cost of the op's ATen evaluation (runtime/reference_eval.cpp), on the CPU, no GPU needed.

The same evaluation runs on the GPU when a chain has no fast fused kernel and no epilogue
kernel applies (a prologue, FXFUSE_NO_POINTWISE=1) and for every call of the CPU op, so its
host time per call matters there (bench/host_overhead.py measures it on the GPU). Tiny CPU
tensors and one thread, so the time is the host work: per chain, microseconds per call of
fxfuse::gemm_chain and the number of ATen ops one call dispatches (torch.profiler, direct
children of the op), beside eager ops for scale.

  python bench/aten_path_host.py [--calls 2000] [--repeats 9]
"""
import argparse
import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

import fxfuse._C  # noqa: F401  (registers the op)

gemm_chain = torch.ops.fxfuse.gemm_chain.default


def spec_bias_gelu(b_dims):
    return ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n"
            f"%1 = input 1 bf16 [{b_dims}]\n%2 = mm %0 %1 : f32\n"
            "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n")


SPEC_INT8 = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [n,k]\n"
             "%2 = input 2 bf16 [n,1]\n%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
             "%6 = input 3 bf16 [n]\n%7 = add %5 %6 : bf16\n%8 = gelu_tanh %7 : bf16\noutput %8\n")


def us_per_call(fn, calls, repeats):
    """(median, min) microseconds per call over `repeats` batches of `calls` calls."""
    for _ in range(200):
        fn()
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(per), min(per)


def aten_ops_per_call(fn):
    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.cpu_parent is not None and e.cpu_parent.name == "fxfuse::gemm_chain")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    M, K, N = 4, 8, 8
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randn(K, N, dtype=torch.bfloat16)
    b = torch.randn(N, dtype=torch.bfloat16)
    wq = torch.randint(-127, 127, (N, K), dtype=torch.int8)
    scale = torch.rand(N, 1, dtype=torch.bfloat16)
    wnk = w.t().contiguous()
    ops = {
        "op bias+gelu_tanh, B [k,n]": lambda: gemm_chain([x, w, b], spec_bias_gelu("k,n")),
        "op bias+gelu_tanh, B [n,k]": lambda: gemm_chain([x, wnk, b], spec_bias_gelu("n,k")),
        "op int8 dequant+bias+gelu": lambda: gemm_chain([x, wq, scale, b], SPEC_INT8),
    }
    eager = {
        "eager gelu(addmm)": lambda: torch.nn.functional.gelu(torch.addmm(b, x, w), approximate="tanh"),
        "eager mm, add, gelu": lambda: torch.nn.functional.gelu(torch.mm(x, w) + b, approximate="tanh"),
    }
    print(f"{'':32s} {'median us':>10s} {'min us':>8s} {'ATen ops':>9s}   (M,K,N = {M},{K},{N} bf16, 1 thread)")
    with torch.inference_mode():
        for name, fn in {**ops, **eager}.items():
            med, best = us_per_call(fn, a.calls, a.repeats)
            n = f"{aten_ops_per_call(fn):9d}" if name.startswith("op") else f"{'-':>9s}"
            print(f"{name:32s} {med:10.2f} {best:8.2f} {n}")


if __name__ == "__main__":
    main()
