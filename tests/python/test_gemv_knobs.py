"""The gemv's measurement knobs (codegen/config_table.cpp; bench/bench_decode.py --stage-kb and
--split-k) do what they say and nothing else: FXFUSE_GEMV_STAGE_KB sizes the pipeline and the
launch bounds follow it (FX_GEMV_MIN_BLOCKS, the CTAs per SM its shared memory allows: session 35's
ptxas spills came from bounds that did not say so), and unset or out of range it is the rule's
~100 KB. Each setting runs in a child: the knobs are read once per process. Needs the built
extension (as tests/python/test_tile_rule_check.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# issue 7's int8 form at M = 16 (a 20 KB stage: 16 KB of int8 weights, 4 KB of activations)
SPEC = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [k,n]\n%2 = input 2 bf16 [n]\n"
        "%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n%6 = input 3 bf16 [n]\n"
        "%7 = add %5 %6 : bf16\noutput %7\n")
CHILD = """
import json, re, sys, fxfuse._C as C
name, src = C.generate_cuda(sys.argv[1], 16, 14336, 4096)
print(json.dumps({k: int(re.search("#define " + k + " ([0-9]+)", src).group(1))
                  for k in ("FX_GEMV_STAGES", "FX_GEMV_MIN_BLOCKS")}))
"""


def macros(stage_kb: str | None) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")}
    env.pop("FXFUSE_GEMV_STAGE_KB", None)
    if stage_kb is not None:
        env["FXFUSE_GEMV_STAGE_KB"] = stage_kb
    out = subprocess.run([sys.executable, "-c", CHILD, SPEC], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("stage_kb,stages,min_blocks", [
    (None, 5, 2),     # the rule: 100 KB -> five 20 KB stages, two CTAs per SM
    ("60", 3, 3),     # session 35's lead (Run AW call 4): three stages, three CTAs
    ("30", 2, 4),     # one stage fits: the template's two, 40 KB, four CTAs (the cap)
    ("1000", 5, 2),   # out of range (16-200): the rule
    ("x", 5, 2),
])
def test_stage_budget_sets_the_stages_and_the_launch_bounds_follow(stage_kb, stages, min_blocks):
    assert macros(stage_kb) == {"FX_GEMV_STAGES": stages, "FX_GEMV_MIN_BLOCKS": min_blocks}
