"""Static statistics of the generated Hopper kernel, no GPU needed: per chain, NVRTC's phase
times (its --time report), the PTX's epilogue loads, and (with nvdisasm) SASS opcode counts and
the consumers' k-loop: its instructions and HGMMA (4 per k-block per 64-row sub-tile).

The source is what the op compiles (`_C.generate_cuda`, every epilogue on the Hopper kernel as
with FXFUSE_SM90_ALL_EPILOGUES=1), compiled with the op's NVRTC options
(codegen/nvrtc_driver.cpp) for sm_90a. nvdisasm is a developer tool, not a project dependency:
point FXFUSE_NVDISASM at one (e.g. from the `nvidia-cuda-nvdisasm` wheel) to get SASS columns.

--without-edge-epilogue compiles the kernel with its per-element edge epilogue (the path for
unaligned outputs) replaced by a trap: what that path costs the compile (bench/RESULTS.md section
4, session 24).

  python bench/sm90/sass_stats.py [--shape 4096x1024x4096] [--chain NAME] [--dump DIR]
                                  [--nvrtc-opt=--Ofast-compile=mid ...] [--without-edge-epilogue]
"""
import argparse
import collections
import ctypes
import os
import re
import subprocess
import sys
import tempfile

os.environ["FXFUSE_SM90_ALL_EPILOGUES"] = "1"  # read once by codegen, before the first plan
import fxfuse._C as C  # noqa: E402
from chain_specs import chains  # noqa: E402

# The Hopper kernel's per-element edge epilogue, as kernels/sm90_wgmma_gemm.cuh writes it.
EDGE_LOOP = re.compile(r"      \{\n#pragma unroll\n        for \(int sub = 0; sub < SUB; \+\+sub\)\n#pragma unroll\n"
                       r"          for \(int jn = 0; jn < BN / 8; \+\+jn\) \{\n            fx_sm90_edge_pair.*?\n"
                       r"          \}\n      \}\n", re.S)


def nvrtc_compile(lib, src, time_csv, extra=(), info=None):
    """(PTX, cubin) of src for sm_90a; info, a dict if given, receives NVRTC's log ("log": ptxas -v's
    registers and spills)."""
    inc = os.path.abspath(os.path.join(os.path.dirname(C.nvrtc_path()), "..", "include"))
    opts = ["--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v", "-DNDEBUG",
            "--include-path=" + inc, "--time=" + time_csv, *extra]
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None)
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    if lib.nvrtcCompileProgram(prog, len(opts), argv) != 0:
        sys.exit("NVRTC failed")
    out = {}
    if info is not None:
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, buf)
        info["log"] = buf.value.decode(errors="replace")
    for what in ("PTX", "CUBIN"):
        n = ctypes.c_size_t()
        getattr(lib, f"nvrtcGet{what}Size")(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        getattr(lib, f"nvrtcGet{what}")(prog, buf)
        out[what] = buf.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return out["PTX"].decode(errors="replace"), out["CUBIN"]


def mainloop(sass, mma="HGMMA"):
    """(instructions, MMAs) of the smallest loop with an `mma` instruction in nvdisasm's text: the
    Hopper consumers' k-loop (HGMMA), unrolled as ptxas left it (the tile's first k-block is peeled
    off before it), or the gemv's stage loop (HMMA); (0, 0) without one."""
    labels, ins, pending = {}, [], []
    for line in sass.splitlines():
        if m := re.match(r"\s*(\.L_x_\d+):", line):
            pending.append(m.group(1))
        elif m := re.match(r"\s+/\*([0-9a-f]+)\*/\s+(.*)", line):
            address = int(m.group(1), 16)
            for label in pending:
                labels[label] = address
            pending = []
            ins.append((address, m.group(2)))
    hgmma = [a for a, text in ins if mma in text]
    best = (0, 0)
    for a, text in ins:
        m = re.search(r"BRA `\((\.L_x_\d+)\)", text)
        if not (m and hgmma and m.group(1) in labels):
            continue
        top = labels[m.group(1)]
        inside = sum(1 for x in hgmma if top <= x <= a)
        n = (a - top) // 16 + 1
        if inside and (best[0] == 0 or n < best[0]):
            best = (n, inside)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="4096x1024x4096", help="MxNxK the kernel is generated for")
    ap.add_argument("--dump", help="a folder to write each chain's source, PTX and SASS into")
    ap.add_argument("--nvrtc-opt", action="append", default=[], help="one more NVRTC option (what it costs or saves)")
    ap.add_argument("--chain", action="append", help="only this bench chain (repeatable)")
    ap.add_argument("--without-edge-epilogue", action="store_true", help="trap the per-element edge epilogue")
    args = ap.parse_args()
    M, N, K = (int(v) for v in args.shape.split("x"))
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    lib = ctypes.CDLL(C.nvrtc_path())
    nvdisasm = os.environ.get("FXFUSE_NVDISASM")
    print(f"{'chain':>16} {'variant':>11} {'front s':>8} {'nvvm s':>7} {'ptxas s':>8} {'ld.nc':>6} "
          f"{'SASS':>6} {'BSSY':>5} {'BRA':>4} {'MUFU':>5} {'loop':>5} {'HGMMA':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in chains().items():
            if args.chain and name not in args.chain:
                continue
            _, src = C.generate_cuda(spec, M, N, K)
            if args.without_edge_epilogue:
                src, n = EDGE_LOOP.subn("      { __trap(); }\n", src)
                if n != 1:
                    sys.exit("the edge epilogue's loop was not found in the generated source")
            csv = os.path.join(tmp, name + ".csv")
            ptx, cubin = nvrtc_compile(lib, src, csv, args.nvrtc_opt)
            phases = {row.split(",")[1].strip(): float(row.split(",")[2]) / 1000
                      for row in open(csv).read().splitlines()[1:] if row.count(",") >= 3}
            sass = ["-"] * 6
            if nvdisasm:
                path = os.path.join(tmp, name + ".cubin")
                open(path, "wb").write(cubin)
                text = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True, check=True).stdout
                ops = collections.Counter(m.group(1) for m in re.finditer(
                    r"/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", text))
                sass = [sum(ops.values()), ops["BSSY"], ops["BRA"], ops["MUFU"], *mainloop(text)]
                if args.dump:
                    open(os.path.join(args.dump, name + ".sass"), "w").write(text)
            if args.dump:
                open(os.path.join(args.dump, name + ".cu"), "w").write(src)
                open(os.path.join(args.dump, name + ".ptx"), "w").write(ptx)
            print(f"{name:>16} {C.kernel_variant(spec, M, N, K)[0]:>11} {phases.get('CUDA C++ Frontend', 0):8.3f} "
                  f"{phases.get('NVVM Optimizer', 0):7.3f} {phases.get('PTX Translation', 0):8.3f} "
                  f"{ptx.count('ld.global.nc'):>6} {sass[0]:>6} {sass[1]:>5} {sass[2]:>4} {sass[3]:>5} {sass[4]:>5} {sass[5]:>6}", flush=True)


if __name__ == "__main__":
    main()
