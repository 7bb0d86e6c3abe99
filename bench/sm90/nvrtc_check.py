#!/usr/bin/env python3
"""NVRTC-compile codegen/kernels/sm90_wgmma_gemm.cuh behind a test preamble (like the generator's)
to a sm_90a cubin; prints the log (ptxas -v).  Usage: python3 nvrtc_check.py [-DFX_BN=128 ...]"""
import ctypes, os, sys, glob, time
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
cands = [os.environ.get("FX_NVRTC_LIB", "")] + glob.glob(
    "/root/.pyenv/versions/*/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13") + \
    glob.glob("/usr/local/cuda/lib64/libnvrtc.so*")
lib = next(c for c in cands if c and os.path.exists(c))
inc = os.path.join(os.path.dirname(os.path.dirname(lib)), "include")
if not os.path.exists(os.path.join(inc, "cuda_bf16.h")):
    inc = "/usr/local/cuda/include"
for b in glob.glob(os.path.join(os.path.dirname(lib), "libnvrtc-builtins.so.*")):
    if ".alt." not in b:
        ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)  # so nvrtc's dlopen finds it without LD_LIBRARY_PATH
nv = ctypes.CDLL(lib)
abi = open(os.path.join(here, "test_abi.h")).read()
var = open(os.path.join(here, "variant.cu")).read()
# the hook part of variant.cu: between the preamble marker and the template include
pre = var.split("// ---------------- test preamble")[1].split("#include \"../../codegen")[0]
pre = "\n".join(pre.splitlines()[1:])
tmpl = open(os.path.join(root, "codegen/kernels/sm90_wgmma_gemm.cuh")).read()
defs = {"VID": "0", "FXV_BF16": "1", "FX_B_KMAJOR": "0", "FXV_EPI": "1"}
extra = []
for a in sys.argv[1:]:
    if a.startswith("-D") and "=" in a:
        k, v = a[2:].split("=", 1); defs[k] = v
    else:
        extra.append(a)
src = "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n" + "".join(
    f"#define {k} {v}\n" for k, v in defs.items()) + abi + "\n" + pre + "\n" + tmpl
prog = ctypes.c_void_p()
assert nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"fx.cu", 0, None, None) == 0
opts = [b"--gpu-architecture=sm_90a", b"-std=c++17", b"--ptxas-options=-v", ("-I" + inc).encode()] + \
    [e.encode() for e in extra]
arr = (ctypes.c_char_p * len(opts))(*opts)
t0 = time.time()
rc = nv.nvrtcCompileProgram(prog, len(opts), arr)
dt = time.time() - t0
n = ctypes.c_size_t()
nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
nv.nvrtcGetProgramLog(prog, log)
print(log.value.decode())
print(f"nvrtc rc={rc} in {dt:.2f}s defs={defs}")
if rc == 0:
    nv.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cub = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetCUBIN(prog, cub)
    out = os.environ.get("FX_CUBIN_OUT", "/tmp/fx_sm90_nvrtc.cubin")
    open(out, "wb").write(cub.raw)
    print(f"cubin {n.value} bytes -> {out}")
sys.exit(rc)
