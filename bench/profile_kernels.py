"""The kernels behind issues 6 and 7's open gaps, one profiled launch each, for Nsight Compute.

Each case is warmed up (plan, compile, load), then called once between
torch.cuda.profiler.start() and stop(), so `ncu --profile-from-start off` profiles exactly that
call's kernels. The op is called directly (torch.ops.fxfuse.gemm_chain) with the spec the pass
would write, so what is profiled is the kernel the op runs, named by the path column.

  ncu --clock-control none --profile-from-start off --section SpeedOfLight ... \
      python3 bench/profile_kernels.py [--only SUBSTRING]     (scripts/gpu-session.sh probe)
"""
import argparse
import os
import sys

import torch

import fxfuse._C  # noqa: F401  (registers the op)
from op_path import path_of_call

gemm_chain = torch.ops.fxfuse.gemm_chain.default

HEAD = "fxfuse.chain v1\ngemm mm\n"
DENSE = HEAD + "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n%3 = input 2 bf16 [n]\n"
BIAS_RELU_CAST = DENSE + "%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\n%6 = convert %5 : f16\noutput %6\n"
BIAS = DENSE + "%4 = add %2 %3 : bf16\noutput %4\n"
# `torch.mm(x, w) + b` in bf16 as the pass writes it (a 16-bit product, then the add): the gemv's 33-64-row rule
# (gemvDenseOneOpRowsAhead) takes only this form
BIAS16 = (HEAD + "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n%3 = input 2 bf16 [n]\n"
          "%4 = add %2 %3 : bf16\noutput %4\n")
BARE = HEAD + "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\noutput %2\n"
INT8_LINEAR_BIAS = (HEAD + "%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [n,k]\n%2 = input 2 bf16 [n,1]\n"
                    "%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
                    "%6 = input 3 bf16 [n]\n%7 = add %5 %6 : bf16\noutput %7\n")


def dense_inputs(M, K, N):
    return [torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
            torch.randn(K, N, device="cuda", dtype=torch.bfloat16) / K ** 0.5,
            torch.randn(N, device="cuda", dtype=torch.bfloat16)]


def int8_inputs(M, K, N):
    return [torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
            torch.randint(-127, 127, (N, K), device="cuda", dtype=torch.int8),
            (torch.rand(N, 1, device="cuda") / 64 + 1e-3).to(torch.bfloat16),
            torch.randn(N, device="cuda", dtype=torch.bfloat16)]


def gptq_layer_call(M, K, N, symmetric):
    """A GPTQ layer (tests/python/gptq_linear.py, f16, G = 128) rewritten by fxfuse.rewrite: its module's call, one op
    on the words (bench/bench_gptq_storage.py times it)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
    from gptq_linear import GPTQLinear
    import fxfuse
    layer = GPTQLinear(K, N, 128, device="cuda", symmetric=symmetric)
    x = torch.randn(M, K, device="cuda").half()
    module = fxfuse.rewrite(torch.export.export(layer, (x,)), only_profitable=False).module()
    return lambda: module(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="profile only the cases whose name contains this")
    a = ap.parse_args()
    torch.manual_seed(0)
    x, w, _ = dense_inputs(4096, 4096, 4096)
    xs, ws, _ = dense_inputs(4096, 1024, 4096)
    x512, x2048 = x[:512].contiguous(), x[:2048].contiguous()
    cases = [
        ("cuBLAS mm 4096^3 bf16", lambda: torch.mm(x, w)),
        ("op bias+relu+cast 4096^3", (BIAS_RELU_CAST, dense_inputs(4096, 4096, 4096))),
        # short K (M 4096, K 1024, N 4096): the Hopper kernel's worst ratio to cuBLAS in Run I
        ("cuBLAS mm short K=1024 bf16", lambda: torch.mm(xs, ws)),
        ("op bias+relu+cast short K=1024", (BIAS_RELU_CAST, dense_inputs(4096, 1024, 4096))),
        ("op int8 linear+bias M=16 4096x14336", (INT8_LINEAR_BIAS, int8_inputs(16, 4096, 14336))),
        ("op int8 linear+bias M=16 14336x4096", (INT8_LINEAR_BIAS, int8_inputs(16, 14336, 4096))),
        ("op int8 linear+bias M=1 4096x14336", (INT8_LINEAR_BIAS, int8_inputs(1, 4096, 14336))),
        ("op bf16 bias M=1 4096x14336", (BIAS, dense_inputs(1, 4096, 14336))),
        # a partial 256-column tile from 1025 rows (bench/RESULTS.md Run AG: 64x256 ping-pong
        # 1.60-1.68x cuBLAS mm at N = 896, 128x256 cooperative 1.04-1.12x), beside whole tiles
        ("op bias+relu+cast 4096x4864x896", (BIAS_RELU_CAST, dense_inputs(4096, 4864, 896))),
        ("op bias+relu+cast 4096x4864x1024", (BIAS_RELU_CAST, dense_inputs(4096, 4864, 1024))),
        # issue 6's farthest cells (session 58): one matrix of 512 rows, where no Hopper tile reaches
        # cuBLAS mm alone (the heuristic's 128x128 cooperative: 128 tiles, one per CTA)
        ("cuBLAS mm 512x4096x4096 bf16", lambda: torch.mm(x512, w)),
        ("op bias+relu+cast 512x4096x4096", (BIAS_RELU_CAST, dense_inputs(512, 4096, 4096))),
        ("op bare mm 512x4096x4096", (BARE, dense_inputs(512, 4096, 4096)[:2])),
        # and 2048 rows (the heuristic's 128x256 cooperative: 256 tiles, two rounds)
        ("cuBLAS mm 2048x4096x4096 bf16", lambda: torch.mm(x2048, w)),
        ("op bias+relu+cast 2048x4096x4096", (BIAS_RELU_CAST, dense_inputs(2048, 4096, 4096))),
        ("op bare mm 2048x4096x4096", (BARE, dense_inputs(2048, 4096, 4096)[:2])),
    ]
    # issue 7's GPTQ layer (bench/RESULTS.md session 66): its zero points cost 50 % at one row, GPTQ's symmetric form
    # (the words alone) 23 % over session 62's bytes
    cases += [(f"op gptq {form} M={m} 4096x14336", lambda m=m, form=form: gptq_layer_call(m, 4096, 14336, form == "sym"))
              for form in ("zeros", "sym") for m in (1, 16)]
    # issue 7's 16-bit gemv at 4096 x 4096 (bench/RESULTS.md session 70): 1.02-1.04x cuBLAS mm at 1-4 rows, at par at 16,
    # and at 64 rows (the 64-column gemv, split-K 2: the rule for the bias alone) 1.16x, where cuBLAS mm takes less time
    # than at 16 rows
    xd = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    cases += [(f"cuBLAS mm M={m} 4096x4096 bf16", lambda m=m: torch.mm(xd[:m], w)) for m in (1, 16, 64)]
    cases += [(f"op bf16 bias M={m} 4096x4096", (BIAS16, dense_inputs(m, 4096, 4096))) for m in (1, 16, 64)]
    for name, case in cases:
        if a.only not in name:
            continue
        if name.startswith("op gptq"):
            case = case()  # a module's call (built only when profiled: the rewrite compiles)
        fn = case if callable(case) else (lambda c=case: gemm_chain(c[1], c[0]))
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        path = path_of_call(fn) if name.startswith("op") else "cuBLAS"
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"profiled: {name} ({path})", flush=True)


if __name__ == "__main__":
    main()
