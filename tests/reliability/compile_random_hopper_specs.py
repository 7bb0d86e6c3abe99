"""Every distinct Hopper-kernel spec of a range of differential seeds, NVRTC-compiled on the CPU
(no GPU): the generated code of random epilogues must compile. The generator runs with the GPU
differential's sizes and half its cases Hopper-plain (FXFUSE_DIFF_HOPPER_PLAIN=0.5 there); each
case is traced on fake CUDA tensors and fused as the differential does (only_profitable=False),
every epilogue on the Hopper kernel (FXFUSE_SM90_ALL_EPILOGUES=1).

  python tests/reliability/compile_random_hopper_specs.py FIRST_SEED COUNT
Prints the counts (specs with an [m,n] residual apart) and every compile error with its seed.
With FXFUSE_SM90_EPILOGUE_OVERLAP=1 in the environment each chain with a 16-bit hand-off also has its
overlapped kernel (the rule's 128x256 at 4096^3) built to a cubin (ptxas too), counted apart.
"""
import collections
import os
import sys
import time
import warnings

os.environ["FXFUSE_SM90_ALL_EPILOGUES"] = "1"  # read once by codegen, before the first plan
OVERLAP = os.environ.get("FXFUSE_SM90_EPILOGUE_OVERLAP") == "1"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "python"), HERE]

import fxfuse._C as C  # noqa: E402
from chain_generator import generate, gpu_config  # noqa: E402
from fused_problems import fused_problems  # noqa: E402

def main(first: int, count: int) -> None:
    warnings.filterwarnings("ignore")
    cfg = gpu_config(hopper_shape_prob=0.3, hopper_plain_prob=0.5)
    counts, seen, t0 = collections.Counter(), set(), time.time()
    for seed in range(first, first + count):
        try:
            problems = fused_problems(generate(seed, cfg), tag="compile-check")
        except Exception:  # noqa: BLE001 - counted, not fatal
            counts["trace_error"] += 1
            continue
        for spec, m, n, k, b in problems:
            if C.kernel_variant(spec, m, n, k, b, "sm_90")[0] != "sm90_wgmma" or spec in seen:
                continue
            seen.add(spec)
            kind = "with_residual" if ",m,n]" in spec or "[m,n]" in spec else "compiled"
            try:
                C.compile_ptx(spec, m, n, k, "sm_90", b)
                counts[kind] += 1
                # the differential's sizes rarely take a 128-row cooperative tile: the overlapped
                # kernel of a chain with a hand-off is built at 4096^3, where the rule takes 128x256
                if OVERLAP and "epioverlap" in C.kernel_candidates_for_size(spec, 4096, 4096, 4096, b)[0]:
                    C.compile_cubin(spec, 4096, 4096, 4096, "sm_90", b)
                    counts["overlapped_" + kind] += 1
            except Exception as e:  # noqa: BLE001 - reported
                counts["error"] += 1
                print(f"ERROR seed {seed}: {str(e)[:400]}", flush=True)
    print(f"seeds {first}..{first + count - 1}: {dict(counts)} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
