"""Both overlapped tiles (128x256 at 4096^3, 128x128 at 512 x 4096 x 4096) of every random differential chain
with a 16-bit hand-off, each built to a cubin (NVRTC + ptxas, no GPU) in its own process, so that a compiler
crash is counted, not fatal (bench/RESULTS.md Run BH; the ptxas 13.0 crash of seed 5001).

  python3 bench/sm90/overlap_compile_scan.py FIRST_SEED COUNT
"""
import os
import subprocess
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["FXFUSE_SM90_ALL_EPILOGUES"] = "1"
os.environ["FXFUSE_SM90_EPILOGUE_OVERLAP"] = "1"
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "reliability")]

import fxfuse._C as C  # noqa: E402
from chain_generator import generate, gpu_config  # noqa: E402
from fused_problems import fused_problems  # noqa: E402


def main(first: int, count: int) -> None:
    warnings.filterwarnings("ignore")
    cfg = gpu_config(hopper_shape_prob=0.3, hopper_plain_prob=0.5)
    seen, results = set(), {}
    for seed in range(first, first + count):
        try:
            problems = fused_problems(generate(seed, cfg), tag="overlap-scan")
        except Exception:  # noqa: BLE001 - the generator's own failures are not this scan's
            continue
        for spec, m, n, k, b in problems:
            if spec in seen or C.kernel_variant(spec, m, n, k, b, "sm_90")[0] != "sm90_wgmma":
                continue
            seen.add(spec)
            for M, N, K in ((4096, 4096, 4096), (512, 4096, 4096)):
                first_config = C.kernel_candidates_for_size(spec, M, N, K, b)[0]
                if "epioverlap" not in first_config:
                    continue
                code = f"import fxfuse._C as C\nC.compile_cubin({spec!r}, {M}, {N}, {K}, 'sm_90', {b})\n"
                r = subprocess.run([sys.executable, "-c", code], env=os.environ, capture_output=True, text=True,
                                   timeout=300)
                kind = "ok" if r.returncode == 0 else "crash" if r.returncode < 0 else "error"
                key = (first_config.split()[1], kind)
                results[key] = results.get(key, 0) + 1
                if kind != "ok":
                    print(f"seed {seed} {first_config}: {kind} rc {r.returncode} {r.stderr[-300:]}", flush=True)
    print(f"seeds {first}..{first + count - 1}: {results}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
