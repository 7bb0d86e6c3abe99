"""Kernel compile and load time (issue 6 targets: cold NVRTC compile <= 0.5 s per kernel, a
warm hit from the disk cache <= 5 ms).

Per kernel, each step in a fresh Python process (nothing in memory), one shared empty cache
directory:
  cold   _C.precompile(inputs, spec) with an empty disk cache: generate + NVRTC + load
  bg 1st / bg ready  (GPU machine only) the op's first call with background compiles on and an
         empty disk cache (fxfuse.set_background_compile: it answers with ATen ops while a worker
         compiles), and the time until the kernel is built (wait_for_compiles); the call after
         that must launch it
  warm   the same in a new process with the cache filled by `cold`: read + checksum + load
  nvrtc  the NVRTC part alone (_C.compile_ptx: source to cubin, PTX kept), no GPU needed
  nvrtc driver-cached  (GPU machine only) the nvrtc step again with the CUDA driver's compute
         cache on, in a private directory filled by one compile before
Each process first initializes CUDA and runs a tiny torch op, so driver start-up is not counted.
NVRTC (12.9+) keeps compiled programs in the CUDA driver's compute cache (~/.nv/ComputeCache)
where a driver is loaded: on the GPU machine a kernel compiled by an earlier process came back in
0.06-0.10 s instead of being compiled (bench/RESULTS.md section 4). The nvrtc, cold and warm
steps therefore run with CUDA_CACHE_DISABLE=1 (warm loads a cubin: the driver cache plays no
part there); the driver-cached column shows the cached compile.

  python bench/compile_time.py [--repeats 3]     (on a machine without a GPU: the nvrtc column only)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HEAD = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
KERNELS = {  # name: (spec, M, K, N)
    "sm90 bias+relu 4096^3": (HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\n"
                              "output %5\n", 4096, 4096, 4096),
    "gemv bias+gelu M=16": (HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\n"
                            "output %5\n", 16, 4096, 4096),
    # issue 7's int8 form, x @ (w_i8.to(bf16) * s) + b: the gemv's int8 main loop (kernels/gemv.cuh,
    # i8pair_scaled; bench/gemv/ab/i8pair_fma.patch doubles it)
    "gemv int8 w*s+b M=16": ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [k,n]\n"
                             "%2 = input 2 bf16 [n]\n%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n"
                             "%5 = mm %0 %4 : f32\n%6 = input 3 bf16 [n]\n%7 = add %5 %6 : bf16\noutput %7\n",
                             16, 4096, 14336),
}

CHILD = r"""
import json, sys, time, torch, fxfuse._C as C
spec, M, K, N, step = json.loads(sys.argv[1])
if step == "nvrtc":
    t = time.perf_counter(); ptx = C.compile_ptx(spec, M, N, K, "sm_90"); dt = time.perf_counter() - t
    entry = next(l.split()[-1].rstrip("(") for l in ptx.splitlines() if ".entry" in l)
    print(json.dumps({"s": dt, "kernel": entry, "ptx_chars": len(ptx),
                      "variant": C.kernel_variant(spec, M, N, K)})); sys.exit()
torch.ones(1, device="cuda").add_(1); torch.cuda.synchronize()   # driver and context up
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
w = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
inputs = [x, w, b]
if " i8 " in spec:  # the int8 chain: x, w_i8, per-channel scale, bias
    inputs = [x, torch.randint(-128, 128, (K, N), device="cuda", dtype=torch.int8),
              torch.rand(N, device="cuda", dtype=torch.bfloat16) / 64, b]
if step == "background":  # the op's first call with background compiles on (an empty disk cache)
    C.set_background_compile(True)
    op = torch.ops.fxfuse.gemm_chain
    torch.relu(torch.mm(x, w) + b); torch.cuda.synchronize()  # cuBLAS's start-up is not fxfuse's
    t = time.perf_counter(); op(inputs, spec); torch.cuda.synchronize(); first = time.perf_counter() - t
    C.wait_for_compiles(); ready = time.perf_counter() - t
    launches = C.stats()["launches"]; op(inputs, spec); torch.cuda.synchronize()
    print(json.dumps({"first_s": first, "ready_s": ready, "launched": C.stats()["launches"] - launches,
                      "aten_calls": C.stats()["background_compile_calls"]})); sys.exit()
before = C.stats()
t = time.perf_counter(); C.precompile(inputs, spec); dt = time.perf_counter() - t
after = C.stats()
print(json.dumps({"s": dt, "compiled": after.get("kernels_compiled", 0) - before.get("kernels_compiled", 0),
                  "disk_hits": after.get("disk_hits", 0) - before.get("disk_hits", 0),
                  "variant": C.kernel_variant(spec, M, N, K)}))
"""


def child(spec, m, k, n, step, cache, driver_cache=None):
    """One step in a fresh process; driver_cache: the CUDA compute cache's directory, else off."""
    env = {**os.environ, "FXFUSE_CACHE_DIR": cache}
    if driver_cache is None:
        env["CUDA_CACHE_DISABLE"] = "1"
    else:
        env.pop("CUDA_CACHE_DISABLE", None)
        env["CUDA_CACHE_PATH"] = driver_cache
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([spec, m, k, n, step])], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import torch

    gpu = torch.cuda.is_available()
    print(f"{'kernel':>24} {'nvrtc s':>9} {'cold s':>8} {'warm ms':>8} {'nvrtc driver-cached s':>22} "
          f"{'bg 1st ms':>10} {'bg ready s':>11}   "
          f"(median of {a.repeats}; gpu={gpu})", flush=True)
    for name, (spec, m, k, n) in KERNELS.items():
        nvrtc, cold, warm, cached, first, ready = [], [], [], [], [], []
        for _ in range(a.repeats):
            with tempfile.TemporaryDirectory() as cache:
                r = child(spec, m, k, n, "nvrtc", cache)
                nvrtc.append(r["s"])
                what = f"{r['kernel']} (variant, fast) = {r['variant']}, PTX {r['ptx_chars']} chars"
                if gpu:
                    r = child(spec, m, k, n, "cold", cache)
                    assert r["compiled"] == 1, "the cold step did not compile"
                    cold.append(r["s"])
                    r = child(spec, m, k, n, "warm", cache)
                    assert r["compiled"] == 0 and r["disk_hits"] == 1, "the warm step did not read the disk cache"
                    warm.append(r["s"] * 1e3)
                    driver_cache = os.path.join(cache, "driver")
                    child(spec, m, k, n, "nvrtc", cache, driver_cache)  # fills it
                    cached.append(child(spec, m, k, n, "nvrtc", cache, driver_cache)["s"])
                    with tempfile.TemporaryDirectory() as empty:
                        r = child(spec, m, k, n, "background", empty)
                    assert r["launched"] == 1 and r["aten_calls"] == 1, f"background step: {r}"
                    first.append(r["first_s"] * 1e3)
                    ready.append(r["ready_s"])
        med = lambda v, w: f"{statistics.median(v):{w}.2f}" if v else f"{'-':>{w}}"  # noqa: E731
        print(f"{name:>24} {med(nvrtc, 9)} {med(cold, 8)} {med(warm, 8)} {med(cached, 22)} {med(first, 10)} "
              f"{med(ready, 11)}", flush=True)
        print(f"{'':>24} compiled: {what}", flush=True)
    print("targets: cold <= 0.5 s, warm <= 5 ms (CUDA_CACHE_DISABLE=1 but in the driver-cached column)")


if __name__ == "__main__":
    main()
