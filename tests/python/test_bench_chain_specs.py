"""The Hopper tools measure the kernels the benchmark runs: bench/sm90/chain_specs.py derives
each chain's spec from the pass (compare_tiles and sass_stats use it), and the spill report's
spec files (bench/sm90/spill_specs, read by a C++ tool) must be the same text. Until session 11
the tools' specs were written by hand and were another chain than the benchmark's (`mm : f32`,
the addmm form; no residual `* 0.5`)."""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "sm90"))

from chain_specs import chains  # noqa: E402


def test_spill_report_specs_are_what_the_pass_writes():
    for name, spec in chains().items():
        with open(os.path.join(ROOT, "bench", "sm90", "spill_specs", name + ".spec")) as f:
            assert f.read() == spec, name


def test_specs_round_the_product_as_eager_does():
    """eager's `torch.mm(x, w) + b` rounds the product to bf16 before the add, and the residual
    chain multiplies by 0.5: the kernels the tools time must do the same work."""
    specs = chains()
    assert sorted(specs) == ["bias_gelu", "bias_gelu_resid", "bias_relu_cast", "silu"]  # the benchmark's four
    for name, spec in specs.items():
        assert "%2 = mm %0 %1 : bf16\n" in spec, (name, spec)
    assert "= mul %5 %6 : bf16\n" in specs["bias_gelu_resid"]
