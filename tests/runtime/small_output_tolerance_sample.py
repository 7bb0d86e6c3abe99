"""Calibration of check_outputs' norm tolerance at the smallest shape (session 63): every CPU chain case at 1x8x16, f16
and bf16, over many seeds, through the real op; prints each case's worst relative norm error against its tolerance and
the runs check_outputs rejects. Not a test (no test_ prefix): `cd tests/runtime && python3
small_output_tolerance_sample.py [SEEDS]` (1,500 seeds: ~3 min on 2 CPUs)."""
import sys

import torch

import fxfuse._C  # noqa: F401  (registers torch.ops.fxfuse.gemm_chain)
from runtime_chain_cases import CASES, TOLERANCE, check_outputs
from test_gemm_chain_cpu import gemm_chain

seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
rejected = runs = 0
for kind in sorted(CASES):
    for dt in (torch.float16, torch.bfloat16):
        worst = 0.0
        for seed in range(seeds):
            torch.manual_seed(10000 + seed)
            case = CASES[kind](dt, "cpu", 1, 8, 16)
            outs = gemm_chain(case.inputs, case.spec)
            for o, r in zip(outs, case.reference(case.inputs)):
                if r.dtype != torch.bool:
                    worst = max(worst, ((o.double() - r).norm() / (r.norm() + 1e-12)).item())
            runs += 1
            try:
                check_outputs(case, outs, dt)
            except AssertionError:
                rejected += 1
        print(f"{kind:20s} {str(dt)[6:]:9s} worst {worst:.3g} = {worst / TOLERANCE[dt]:.2f}x the tolerance")
print(f"runs {runs}, rejected by check_outputs {rejected}")
