"""The gemv kernel's code per pipeline stage, no GPU needed: for issue 7's weight forms (int8 and
fp8 with a bf16 per-column scale and a bias, dense bf16; both weight layouts) at the given rows,
the kernel the library generates (fxfuse._C.generate_cuda) compiled by NVRTC for sm_90a: its
registers and spill bytes (ptxas -v), the NVRTC time, and with nvdisasm (FXFUSE_NVDISASM, e.g. from
the `nvidia-cuda-nvdisasm` wheel) the instructions and HMMAs of its stage loop (the smallest loop
with an HMMA: one stage's loads, barrier and compute) and, with --blocks, of each basic block that
holds HMMAs (the compute body; a loop with two bodies, as bench/gemv/ab/i8pair_fma.patch makes,
counts both). bench/gemv/NOTES.md session 35.

    PYTHONPATH=python:bench/sm90 python3 bench/gemv/sass_stage.py [--m 1,16,64] [--form int8_kn,...]
                                                                 [--blocks]
"""
import argparse
import ctypes
import os
import re
import subprocess
import tempfile
import time

import fxfuse._C as C
from sass_stats import mainloop, nvrtc_compile

HEAD = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n"
SCALED = ("%2 = input 2 bf16 {scale}\n%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
          "%6 = input 3 bf16 [n]\n%7 = add %5 %6 : bf16\noutput %7\n")
DENSE = "%2 = mm %0 %1 : f32\n%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\noutput %4\n"
FORMS = {  # x @ (w.to(bf16) * s) + b (int8, fp8) and x @ w + b (bf16); kn: w [K, N], nk: [N, K]
    "int8_kn": HEAD + "%1 = input 1 i8 [k,n]\n" + SCALED.format(scale="[n]"),
    "int8_nk": HEAD + "%1 = input 1 i8 [n,k]\n" + SCALED.format(scale="[n,1]"),
    "fp8_kn": HEAD + "%1 = input 1 f8e4m3 [k,n]\n" + SCALED.format(scale="[n]"),
    "bf16_kn": HEAD + "%1 = input 1 bf16 [k,n]\n" + DENSE,
    "bf16_nk": HEAD + "%1 = input 1 bf16 [n,k]\n" + DENSE,
}


def mma_blocks(sass):
    """Instructions of each basic block (between nvdisasm's labels) that holds an HMMA."""
    sizes, n, mma = [], 0, False
    for line in sass.splitlines():
        if re.match(r"\s*\.L_x_\d+:", line):
            if mma:
                sizes.append(n)
            n, mma = 0, False
        elif re.match(r"\s+/\*[0-9a-f]+\*/\s+\S", line):
            n += 1
            mma = mma or "HMMA" in line
    return sizes + [n] if mma else sizes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", default="1,16,64", help="rows (comma-separated)")
    ap.add_argument("--form", default=",".join(FORMS), help="weight forms (comma-separated): " + ", ".join(FORMS))
    ap.add_argument("--shape", default="4096x14336", help="K x N")
    ap.add_argument("--blocks", action="store_true", help="also the basic blocks with HMMAs (needs nvdisasm)")
    args = ap.parse_args()
    K, N = (int(v) for v in args.shape.split("x"))
    lib = ctypes.CDLL(C.nvrtc_path())
    nvdisasm = os.environ.get("FXFUSE_NVDISASM")
    print(f"{'form':>8} {'M':>3} {'variant':>12} {'regs':>5} {'spill B':>7} {'nvrtc s':>8} {'stage loop':>10} {'HMMA':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for form in args.form.split(","):
            for M in (int(m) for m in args.m.split(",")):
                variant, _ = C.kernel_variant(FORMS[form], M, N, K)
                if variant != "gemv":
                    print(f"{form:>8} {M:>3} {variant:>12}  (not the gemv)")
                    continue
                _, src = C.generate_cuda(FORMS[form], M, N, K)
                info = {}
                t = time.perf_counter()
                _, cubin = nvrtc_compile(lib, src, os.path.join(tmp, "t.csv"), info=info)
                seconds = time.perf_counter() - t
                regs = max(int(r) for r in re.findall(r"Used (\d+) registers", info["log"]))
                spill = max(int(b) for b in re.findall(r"(\d+) bytes spill stores", info["log"]))
                loop, blocks = (0, 0), []
                if nvdisasm:
                    path = os.path.join(tmp, "k.cubin")
                    open(path, "wb").write(cubin)
                    sass = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, check=True).stdout
                    loop, blocks = mainloop(sass, mma="HMMA"), mma_blocks(sass)
                print(f"{form:>8} {M:>3} {variant:>12} {regs:>5} {spill:>7} {seconds:8.2f} {loop[0] or '-':>10} "
                      f"{loop[1] or '-':>5}" + (f"  blocks {blocks}" if args.blocks else ""), flush=True)


if __name__ == "__main__":
    main()
