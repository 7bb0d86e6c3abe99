#!/usr/bin/env python3
"""Compile codegen/kernels/gemv.cuh under NVRTC (as the runtime would) for a set of test preambles.
Prints ptxas register/smem/spill info. No GPU needed.  usage: python3 nvrtc_check.py [sm_90a sm_80]"""
import ctypes, os, re, sys, itertools
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
LIB = os.environ.get("NVRTC_LIB", "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13")
CUDA_INC = os.environ.get("CUDA_INC", "/usr/local/cuda/include")
nv = ctypes.CDLL(LIB)

def compile_src(src, arch):
    prog = ctypes.c_void_p()
    r = nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"gemv.cu", 0, None, None)
    assert r == 0, r
    opts = [f"--gpu-architecture={arch}", "-std=c++17", f"-I{CUDA_INC}", "--ptxas-options=--verbose", "-default-device"]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    r = nv.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetProgramLog(prog, log)
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return r, log.value.decode(errors="replace")

def source(elem, raw, scale_t, kmajor, mtiles, stages, qscale=1, splitk=0):
    abi = open(os.path.join(HERE, "abi.inc")).read()
    pre = open(os.path.join(HERE, "preamble.inc")).read()
    pre = pre.replace('#include "../../codegen/kernels/gemv.cuh"', open(os.path.join(ROOT, "codegen/kernels/gemv.cuh")).read())
    head = "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <cuda_fp8.h>\n" + abi
    d = [f"#define INST_NS ns", f"#define INST_KNAME fx_gemv_test", f"#define INST_ELEM {elem}",
         f"#define INST_RAW {raw}", f"#define INST_RAW_IS_PLAIN {1 if raw == elem else 0}",
         f"#define INST_SCALE_T {scale_t}", f"#define INST_KMAJOR {kmajor}", f"#define INST_MTILES {mtiles}",
         f"#define INST_STAGES {stages}", f"#define INST_QSCALE {qscale}"]
    if splitk: d.append(f"#define FX_GEMV_SPLITK {splitk}")
    return head + "\n".join(d) + "\n" + pre

if __name__ == "__main__":
    archs = sys.argv[1:] or ["sm_90a", "sm_80"]
    cases = []
    for kmaj in (0, 1):
        for mt in (1, 2, 8):
            cases += [("__nv_bfloat16", "__nv_bfloat16", "float", kmaj, mt, 5),
                      ("__half", "__half", "float", kmaj, mt, 5),
                      ("__nv_bfloat16", "signed char", "__nv_bfloat16", kmaj, mt, 4),
                      ("__nv_bfloat16", "__nv_fp8_e4m3", "float", kmaj, mt, 4)]
        cases.append(("__nv_bfloat16", "signed char", "__nv_bfloat16", kmaj, 1, 4, 0))   # slow dequant path
        cases.append(("__nv_bfloat16", "__nv_bfloat16", "__nv_bfloat16", kmaj, 2, 4, 1))  # 16-bit raw + scale
    bad = 0
    for arch in archs:
        for cs in cases:
            extra = {}
            if arch.startswith("sm_90") and cs[4] == 2 and cs[3] == 0: extra = {"splitk": 4}
            r, log = compile_src(source(*cs, **extra), arch)
            info = " ".join(re.findall(r"(Used \d+ registers|\d+ bytes stack frame|\d+ bytes spill stores|\d+ bytes spill loads)", log))
            tag = f"{arch} elem={cs[0]} raw={cs[1]} kmajor={cs[3]} mt={cs[4]}" + (f" qscale={cs[6]}" if len(cs) > 6 else "") + (" splitk=4" if extra else "")
            if r != 0:
                bad += 1
                print("FAIL", tag); print(log[:4000])
            else:
                print("ok  ", tag, "|", info)
    sys.exit(1 if bad else 0)
