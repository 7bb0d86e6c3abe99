"""Host overhead per call of fxfuse::gemm_chain (no CUDA graphs), against torch.mm.

Tiny shapes, so that the GPU finishes each kernel faster than the host can issue the next one:
N back-to-back calls then take N x (host time per call). Two clocks per case:
  host   time.perf_counter around the N calls (no sync inside): what Python + the op cost
  events CUDA events around the same N calls, synchronized at the end: the stream's view
and the fxfuse cost above a plain torch.mm call (the op also allocates its outputs, as mm does).
The rows time the op under inference_mode, which skips its Autograd kernel; the "no_grad" column
times the same call as most deployments make it, under torch.no_grad() with the weight an
nn.Parameter (requires_grad): the Autograd kernel then runs (the forward-AD tangent check and the
requires_grad scan per input) and the column shows what it adds.
Issue target: gemm_chain host time per call <= torch.mm's + 5 us (call-site cache hit path).

  python bench/host_overhead.py [--calls 2000] [--repeats 5] [--force-kernel]

Checks the op ran what it should (stats: launches / aten_dispatch / call_cache_hits).
"""
import argparse
import os
import statistics
import time

import torch

import fxfuse._C as C  # also registers the op
from op_path import counters, path_of

gemm_chain = torch.ops.fxfuse.gemm_chain.default


# The activation after the bias: its spec op and eager's function. erf-GELU has no fast kernel
# beyond gemv's decode sizes (codegen epilogueRefusal: never measured fused), so its rows
# time the op's unfused path; GELU(tanh) and ReLU take the Hopper kernel at these K.
ACTS = {"gelu": ("gelu_tanh", lambda y: torch.nn.functional.gelu(y, approximate="tanh")),
        "gelu_erf": ("gelu", torch.nn.functional.gelu),
        "relu": ("relu", torch.relu)}


def spec_bias_act(d, b_dims, act):
    return ("fxfuse.chain v1\ngemm mm\n"
            f"%0 = input 0 {d} [m,k]\n%1 = input 1 {d} [{b_dims}]\n%2 = mm %0 %1 : f32\n"
            f"%3 = input 2 {d} [n]\n%4 = add %2 %3 : {d}\n%5 = {ACTS[act][0]} %4 : {d}\noutput %5\n")


def make_case(M, K, N, act, dtype=torch.bfloat16, b_layout="nk"):
    d = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}[dtype]
    x = torch.randn(M, K, device="cuda", dtype=dtype)
    w = torch.randn(N, K, device="cuda", dtype=dtype) / K ** 0.5
    if b_layout == "kn":
        w = w.t().contiguous()
    b = torch.randn(N, device="cuda", dtype=dtype)
    return [x, w, b], spec_bias_act(d, ",".join(b_layout), act)


def time_calls(fn, calls, repeats):
    """(host us/call, event us/call): medians over `repeats` batches of `calls` calls."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    host, dev = [], []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        end.record()
        torch.cuda.synchronize()
        host.append((t1 - t0) / calls * 1e6)
        dev.append(start.elapsed_time(end) / calls * 1e3)
    return statistics.median(host), statistics.median(dev)


def time_under_no_grad(ins, spec, calls, repeats):
    """Host us/call of the op under torch.no_grad() with normal (not inference) tensors and the
    weight a Parameter, as a model called under no_grad() passes them."""
    with torch.inference_mode(False):  # the caller's block is inference_mode: leave it
        plain = [t.clone() for t in ins]
        plain[1] = torch.nn.Parameter(plain[1])
        with torch.no_grad():
            return time_calls(lambda: gemm_chain(plain, spec), calls, repeats)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--force-kernel", action="store_true",
                    help="FXFUSE_FORCE_KERNEL=1: launch the generic kernel on non-fast shapes")
    args = ap.parse_args()
    if args.force_kernel:
        os.environ["FXFUSE_FORCE_KERNEL"] = "1"
    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"calls={args.calls} repeats={args.repeats}")

    # (label, M, K, N, B layout, activation); the label gets the variant the heuristic picks in
    # brackets (`_C.kernel_variant`, so it cannot go stale: until session 51 the M = 128 rows were
    # labelled "sm90 TMA" and ran cuBLAS + the epilogue kernel); the path column shows what the op
    # ran. The Hopper rows are the smallest sizes it takes (512^3: a few us of GPU time, below the
    # host time measured, so the launch queue never fills).
    cases = [
        ("decode M=1 gelu", 1, 256, 256, "nk", "gelu"),
        ("M=16 gelu", 16, 512, 512, "nk", "gelu"),
        ("M=512 relu", 512, 512, 512, "kn", "relu"),
        ("M=512 gelu", 512, 512, 512, "kn", "gelu"),
        ("M=128 relu", 128, 256, 256, "kn", "relu"),
        ("M=128 erf-gelu", 128, 256, 256, "kn", "gelu_erf"),
        ("M=48 gelu", 48, 256, 256, "kn", "gelu"),
    ]
    with torch.inference_mode():
        x0 = torch.randn(16, 256, device="cuda", dtype=torch.bfloat16)
        w0 = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
        mm_host, mm_dev = time_calls(lambda: torch.mm(x0, w0), args.calls, args.repeats)
        print(f"{'torch.mm 16x256x256':34s} host {mm_host:7.2f} us/call   events {mm_dev:7.2f} us/call")
        print("-" * 100)
        for label, M, K, N, layout, act in cases:
            ins, spec = make_case(M, K, N, act, b_layout=layout)
            variant, fast = C.kernel_variant(spec, M, N, K)
            label = f"{label} [{variant}{'' if fast else ', no fast kernel'}]"
            gemm_chain(ins, spec)  # plan + compile outside the timing
            torch.cuda.synchronize()
            before = counters()
            host, dev = time_calls(lambda: gemm_chain(ins, spec), args.calls, args.repeats)
            after = counters()
            n = 50 + args.calls * args.repeats
            path = path_of(before, after, n)
            hits = after["call_cache_hits"] - before["call_cache_hits"]
            x, w, b = ins
            wt = w.t() if layout == "nk" else w
            eager = lambda: ACTS[act][1](torch.addmm(b, x, wt))  # noqa: E731
            e_host, e_dev = time_calls(eager, args.calls, args.repeats)
            ng_host = time_under_no_grad(ins, spec, args.calls, args.repeats)
            print(f"{label:34s} host {host:7.2f} us/call   events {dev:7.2f} us/call   "
                  f"over mm {host - mm_host:+6.2f} us   ({path}, "
                  f"cache hits {hits}/{n})   no_grad {ng_host - host:+5.2f} us   "
                  f"eager addmm+{act} host {e_host:6.2f} events {e_dev:6.2f}")
    print("target: 'over mm' <= 5 us on the kernel rows (host overhead of the op's C++ path "
          "plus the dispatcher's Tensor[]/str boxing).")


if __name__ == "__main__":
    main()
