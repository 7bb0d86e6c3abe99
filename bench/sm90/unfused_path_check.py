"""The op's unfused path ("aten": cuBLAS, then the epilogue-alone kernel) timed on its own, per chain, beside
cuBLAS mm alone and ATen's own ops for the same chain: session 57's compare_tiles read SiLU's unfused path at 512
x 4096 x 4096 as 5.4x mm in its warm-up (0.158-0.192 ms in three rounds) where bias+GELU's took 0.039 ms. Each
variant called --calls times after a warm-up, CUDA events around the batch (L2 not flushed: the question is a
many-fold gap, not a few per cent), with the op's launch counters per call.

  python3 bench/sm90/unfused_path_check.py [--mkn 512x4096x4096,2048x4096x4096] [--chains silu,bias_gelu]  (GPU)
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fxfuse._C as C  # noqa: E402
from chain_specs import chains  # noqa: E402
from compare_tiles import inputs_for  # noqa: E402

ATEN_FORMS = {  # the chain as eager writes it
    "silu": lambda x, w, *r: F.silu(x @ w),
    "bias_gelu": lambda x, w, b, *r: F.gelu(x @ w + b, approximate="tanh"),
    "bias_relu_cast": lambda x, w, b, *r: torch.relu(x @ w + b).to(torch.float16),
    "bias_gelu_resid": lambda x, w, b, r: F.gelu(x @ w + b, approximate="tanh") * 0.5 + r,
}


def per_call_ms(fn, calls):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkn", default="512x4096x4096,2048x4096x4096")
    ap.add_argument("--chains", default="silu,bias_gelu,bias_relu_cast")
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    op = torch.ops.fxfuse.gemm_chain
    print(f"{'shape':>16} {'chain':>15} {'mm':>8} {'eager':>8} {'unfused':>8} {'kernel':>8}  unfused per call")
    for mkn in a.mkn.split(","):
        M, K, N = (int(v) for v in mkn.split("x"))
        for name in a.chains.split(","):
            spec = chains()[name]
            ins = inputs_for(spec, M, K, N)
            row = {"mm": per_call_ms(lambda: torch.mm(ins[0], ins[1]), a.calls),
                   "eager": per_call_ms(lambda: ATEN_FORMS[name](*ins), a.calls)}
            C.set_kernel_choice(ins, spec, "aten")
            before = C.stats()
            row["unfused"] = per_call_ms(lambda: op(ins, spec), a.calls)
            after = C.stats()
            C.set_kernel_choice(ins, spec, "")
            row["kernel"] = per_call_ms(lambda: op(ins, spec), a.calls)
            n = a.calls + 5
            counts = {k: (after.get(k, 0) - before.get(k, 0)) / n for k in
                      ("launches", "pointwise_launches", "aten_dispatch", "fallbacks", "call_cache_hits", "specs_parsed")}
            print(f"{mkn:>16} {name:>15} " + " ".join(f"{row[k]:8.4f}" for k in ("mm", "eager", "unfused", "kernel"))
                  + "  " + " ".join(f"{k}={v:g}" for k, v in counts.items()), flush=True)


if __name__ == "__main__":
    main()
