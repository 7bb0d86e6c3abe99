"""bench/sm90/tile_rule_check.py asks the built library for the planner's choices and lays them
beside compare_tiles' measurements; its --share table is where the work-share refusal's figures
(codegen/config_table.cpp, bench/RESULTS.md Run AH) come from. Run on a stored measurement (no GPU)
so the script and the binding it reads (fxfuse._C.hopper_work_share) cannot drift from the rule."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SM90 = os.path.join(ROOT, "bench", "sm90")
RULES = os.path.join(SM90, "data", "run_ah_call8_rules_compare_tiles.json")  # Run AH call 8's 11 shapes


def run(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(ROOT, "bench")])}
    env.pop("FXFUSE_SM90_ALL_EPILOGUES", None)
    return subprocess.run([sys.executable, "tile_rule_check.py", *args], cwd=SM90, env=env, capture_output=True,
                          text=True, check=True).stdout


def test_share_table_shows_the_rule_on_both_sides_of_its_threshold():
    rows = {line.split()[0] + line.split()[1] + line.split()[2]: line.split()
            for line in run("--share", RULES).splitlines() if line.lstrip()[:1].isdigit()}
    refused = rows["3072x4096x768"]  # 72 tiles of 128x256 in one round: 0.545 <= 0.727
    assert refused[3:6] == ["128x256", "coop", "0.545"] and refused[6] == "0.727", refused
    taken = rows["2048x4864x896"]  # 128x128 in one round: 0.798 > K / (K + 1536) = 0.760
    assert taken[3:6] == ["128x128", "coop", "0.798"] and taken[6] == "0.760", taken
    assert rows["10240x4096x128"][6] == "0.000"  # N < 512: outside the rule


def test_default_mode_counts_the_planners_choices_against_the_measurement():
    out = run(RULES)
    # call 8 ran the rule with ties taken; the committed rule refuses the tie at 4096 x 768
    assert "the heuristic's tile is the fastest Hopper tile or within 2 % in" in out
    assert "  3072x4096x768        bias_gelu  refused:" in out
    assert "  10240x4096x128        bias_gelu  rule 128x128 coop" in out


def test_default_mode_asks_with_each_chains_spec():
    # Run AN call 2: 128x256 takes two rounds at 768 x 4096 x 11008; the tile choice weighs the
    # residual (sm90::EpilogueLoad), so the residual chain's rule is 128x128 ping-pong, bias+GELU's
    # 128x256 (a bare mm's spec would give 128x256 for both)
    out = run(os.path.join(SM90, "data", "run_an_call2_tiles_compare_tiles.json"))
    assert "  768x4096x11008  bias_gelu_resid  rule   128x128 pp" in out, out
    assert "  768x4096x11008        bias_gelu  rule 128x256 coop" in out, out


def test_silu_refusals_are_not_judged_against_the_ops_unfused_path():
    # SiLU alone is refused against eager's cheaper SiLU kernel, not against cuBLAS + the op's
    # epilogue kernel ("aten", which compare_tiles times): Run AQ call 4's rules shapes hold SiLU
    # cells the planner refuses (2048 x 4864 x 896 among them), listed but not counted
    out = run(os.path.join(SM90, "data", "run_aq_call4_rules_compare_tiles.json"))
    silu = [line for line in out.splitlines() if " silu  refused:" in line]
    assert silu and all(line.endswith("(against eager's SiLU: not counted)") for line in silu), out
    assert f"{len(silu)} refused cells of SiLU alone, judged against eager's SiLU kernel" in out, out
    counted = [line for line in out.splitlines() if "refused:" in line and " silu " not in line]
    assert f"within 2 % in {sum(float(line.split()[-1]) <= 1.02 for line in counted)} of {len(counted)} cells" in out, out
