"""Where the overlapped Hopper kernel's cold compile goes, and whether its chain-independent part could
be compiled once and linked (bench/sm90/NOTES.md session 49). No GPU needed.

In the overlapped kernel (FX_EPI_OVERLAP) the chain's code runs only in the epilogue warps, which hold
no accumulator: the consumers hand each tile over as 16-bit values in shared memory. So the kernel
splits into a chain-independent part (producer, consumers, hand-off) and the chain's epilogue. Per
chain of bench/sm90/chain_specs.py, at the shape's planned tile, three sources are compiled for
sm_90a with the op's NVRTC options, in alternating rounds (the minimum of each is printed):
  whole    the source the op compiles;
  no-chain the epilogue lambda cut to one hand-off load and a guarded store: what a per-tile
           compile, shared by every chain, would cost;
  extern   the epilogue lambda as a call to an external function (relocatable device code): what
           linking a separately compiled epilogue would need. ptxas's remarks about it are printed
           (C7504: setmaxnreg ignored; C7509: wgmma serialized).

  python3 bench/sm90/compile_split.py [--shape 4096x4096x4096] [--rounds 3] [--chain NAME]
"""
import argparse
import ctypes
import os
import re
import tempfile

from sass_stats import C, chains, nvrtc_compile

PHASES = ("CUDA C++ Frontend", "NVVM Optimizer", "PTX Translation")  # NVRTC's --time rows
LAMBDA_START = "const auto overlap_epilogue_tile = [&]"
LAMBDA_END = "  // warps running the last tile's epilogue"
SIGNATURE = ("(const u32 handoff, const int b, const int tm, const int tn, const int w, const int nw)")

NO_CHAIN = ("const auto overlap_epilogue_tile = [&]" + SIGNATURE + " {\n"
            "    bar_sync_n(FX_BAR_HANDOFF_FULL, FX_EPI_BAR_THREADS);\n"
            "    const uint4 h = ld_shared_v4(handoff + (u32)((w * 32 + tid % 32) * 16));\n"
            "    if (h.x == 12345u) *reinterpret_cast<uint4*>(fx_staged_out(p, b, tm, tn)) = h;\n"
            "  };\n")
EXTERN = ("const auto overlap_epilogue_tile = [&]" + SIGNATURE + " {\n"
          "    fx_overlap_epilogue_linked(p, handoff, b, tm, tn, w, nw);\n"
          "  };\n")
EXTERN_DECL = ('extern "C" __device__ void fx_overlap_epilogue_linked(const fxfuse::FxParams& p, unsigned handoff,'
               ' int b, int tm, int tn, int w, int nw);\n')


def variants(src: str) -> dict:
    a = src.index(LAMBDA_START)
    b = src.index(LAMBDA_END, a)
    k = src.index('extern "C" __global__')
    return {
        "whole": (src, []),
        "no-chain": (src[:a] + NO_CHAIN + src[b:], []),
        "extern": (src[:k] + EXTERN_DECL + src[k:a] + EXTERN + src[b:], ["--relocatable-device-code=true"]),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="4096x4096x4096", help="MxNxK; its planned tile must be overlapped")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chain", action="append", help="only this bench chain (repeatable)")
    args = ap.parse_args()
    M, N, K = (int(v) for v in args.shape.split("x"))
    lib = ctypes.CDLL(C.nvrtc_path())
    print(f"{'chain':>16} {'variant':>9} {'front s':>8} {'nvvm s':>7} {'ptxas s':>8} {'total s':>8} {'regs':>5}  remarks")
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in chains().items():
            if args.chain and name not in args.chain:
                continue
            _, src = C.generate_cuda(spec, M, N, K)
            if "FX_EPI_OVERLAP 1" not in src:
                print(f"{name:>16} the planned tile at {args.shape} is not overlapped: skipped")
                continue
            best, notes = {}, {}
            for _ in range(args.rounds):
                for variant, (code, extra) in variants(src).items():
                    csv = os.path.join(tmp, "time.csv")
                    info = {}
                    nvrtc_compile(lib, code, csv, extra, info)
                    rows = [row.split(",") for row in open(csv).read().splitlines()[1:] if row.count(",") >= 3]
                    named = {r[1].strip(): float(r[2]) / 1000 for r in rows}
                    phases = [named.get(ph, 0.0) for ph in PHASES]
                    if variant not in best or sum(phases) < sum(best[variant]):
                        best[variant] = phases
                    regs = re.findall(r"Used (\d+) registers", info["log"])
                    remarks = sorted(set(re.findall(r"\((C75\d\d)\) Potential Performance Loss", info["log"])))
                    notes[variant] = (regs[0] if regs else "-", " ".join(remarks))
            for variant, phases in best.items():
                fe, nvvm, ptxas = phases
                print(f"{name:>16} {variant:>9} {fe:8.3f} {nvvm:7.3f} {ptxas:8.3f} {sum(phases):8.3f} "
                      f"{notes[variant][0]:>5}  {notes[variant][1]}", flush=True)


if __name__ == "__main__":
    main()
