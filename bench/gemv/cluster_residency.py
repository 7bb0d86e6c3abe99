"""How many of the gemv's split-K clusters the GPU holds at once (bench/gemv/NOTES.md session 36:
at two CTAs per SM, 32 clusters of 8 were inferred not to fit the GPCs; a pipeline for three per SM
was measured 5-26 % faster on the same grid). For int8 weights (x @ (w.to(bf16) * s) + b) at the given
rows and K x N, the library's kernel is compiled by NVRTC with each given pipeline depth (its
FX_GEMV_STAGES and, from the shared memory as the generator does, FX_GEMV_MIN_BLOCKS), loaded
through the driver, and asked cuOccupancyMaxActiveBlocksPerMultiprocessor (CTAs per SM) and
cuOccupancyMaxActiveClusters for each split-K S: the grid's clusters (column tiles x row blocks)
against the clusters resident at once.

    PYTHONPATH=python:bench/sm90 python3 bench/gemv/cluster_residency.py [--m 1,16] [--shape 14336x4096]
        [--stages 2,3,5] [--split-k 2,4,8] [--dry-run]
(--dry-run: compile and print the shared memory only, no GPU.)
"""
import argparse
import ctypes
import os
import re
import tempfile

import fxfuse._C as C
from sass_stats import nvrtc_compile

SPEC = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [k,n]\n%2 = input 2 bf16 [n]\n"
        "%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n%6 = input 3 bf16 [n]\n"
        "%7 = add %5 %6 : bf16\noutput %7\n")
SMEM_PER_SM, RESERVED_PER_CTA = 228 * 1024, 1024  # sm_90, as codegen/config_table.cpp counts
FUNC_ATTR_MAX_DYNAMIC_SHARED = 8
LAUNCH_ATTR_CLUSTER_DIMENSION = 4


class LaunchAttribute(ctypes.Structure):  # CUlaunchAttribute: id, pad, a 64-byte value union
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("x", ctypes.c_uint), ("y", ctypes.c_uint),
                ("z", ctypes.c_uint), ("rest", ctypes.c_char * 52)]


class LaunchConfig(ctypes.Structure):  # CUlaunchConfig (runtime/cuda_driver.h checks the same layout)
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint), ("bx", ctypes.c_uint),
                ("by", ctypes.c_uint), ("bz", ctypes.c_uint), ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("num_attrs", ctypes.c_uint)]


assert ctypes.sizeof(LaunchAttribute) == 72 and ctypes.sizeof(LaunchConfig) == 56


def with_stages(src, stages):
    """The generated source with FX_GEMV_STAGES = stages and the launch bounds the generator would
    give that pipeline; (source, dynamic shared memory bytes, CTAs per SM by shared memory)."""
    mtiles = int(re.search(r"#define FX_GEMV_MTILES (\d+)", src).group(1))
    smem = max(stages * (128 * 128 + 8 * mtiles * 128 * 2), 8 * mtiles * 132 * 4)  # int8: k-step 128
    fit = max(1, min(4, SMEM_PER_SM // (smem + RESERVED_PER_CTA)))
    src = re.sub(r"#define FX_GEMV_STAGES \d+", f"#define FX_GEMV_STAGES {stages}", src)
    src = re.sub(r"#define FX_GEMV_MIN_BLOCKS \d+", f"#define FX_GEMV_MIN_BLOCKS {fit}", src)
    return src, smem, fit


class Driver:
    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.check(self.cu.cuInit(0), "cuInit")
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self.check(self.cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        self.check(self.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    @staticmethod
    def check(r, what):
        if r != 0:
            raise RuntimeError(f"{what} failed: CUresult {r}")

    def function(self, cubin, name, smem):
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), cubin), "cuModuleLoadData")
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
        self.check(self.cu.cuFuncSetAttribute(fn, FUNC_ATTR_MAX_DYNAMIC_SHARED, smem), "cuFuncSetAttribute")
        return fn

    def ctas_per_sm(self, fn, smem):
        n = ctypes.c_int()
        self.check(self.cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), fn, 128, ctypes.c_size_t(smem)),
                   "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return n.value

    def max_active_clusters(self, fn, grid, split_k, smem):
        attr = LaunchAttribute(id=LAUNCH_ATTR_CLUSTER_DIMENSION, x=1, y=split_k, z=1)
        cfg = LaunchConfig(gx=grid[0], gy=split_k, gz=grid[2], bx=128, by=1, bz=1, smem=smem, stream=None,
                           attrs=ctypes.pointer(attr), num_attrs=1)
        n = ctypes.c_int()
        self.check(self.cu.cuOccupancyMaxActiveClusters(ctypes.byref(n), fn, ctypes.byref(cfg)),
                   "cuOccupancyMaxActiveClusters")
        return n.value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", default="1,16")
    ap.add_argument("--shape", default="14336x4096", help="K x N")
    ap.add_argument("--stages", default="2,3,4,5")
    ap.add_argument("--split-k", default="2,4,8")
    ap.add_argument("--dry-run", action="store_true", help="compile only (no GPU)")
    a = ap.parse_args()
    K, N = (int(v) for v in a.shape.split("x"))
    lib = ctypes.CDLL(C.nvrtc_path())
    drv = None if a.dry_run else Driver()
    print(f"{'M':>3} {'stages':>6} {'smem KB':>7} {'fit/SM':>6} {'driver/SM':>9} {'S':>2} {'clusters':>8} {'resident':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for M in (int(m) for m in a.m.split(",")):
            name, src = C.generate_cuda(SPEC, M, N, K)
            mtiles = int(re.search(r"#define FX_GEMV_MTILES (\d+)", src).group(1))
            grid = ((N + 127) // 128, 0, (M + 8 * mtiles - 1) // (8 * mtiles))
            for stages in (int(s) for s in a.stages.split(",")):
                staged, smem, fit = with_stages(src, stages)
                _, cubin = nvrtc_compile(lib, staged, os.path.join(tmp, "t.csv"))
                if drv is None:
                    print(f"{M:>3} {stages:>6} {smem / 1024:7.1f} {fit:>6}   (dry run: {len(cubin)} bytes of cubin)")
                    continue
                fn = drv.function(cubin, name, smem)
                per_sm = drv.ctas_per_sm(fn, smem)
                for s in (int(v) for v in a.split_k.split(",")):
                    resident = drv.max_active_clusters(fn, grid, s, smem)
                    print(f"{M:>3} {stages:>6} {smem / 1024:7.1f} {fit:>6} {per_sm:>9} {s:>2} {grid[0] * grid[2]:>8} "
                          f"{resident:>8}", flush=True)


if __name__ == "__main__":
    main()
