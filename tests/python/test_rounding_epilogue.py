"""round / floor / ceil / trunc after a GEMM (spec ops since session 56; they had ended the chain), and the epilogue
they make possible: requantizing a GEMM's output to int8 in the same kernel, `clamp(round(y * s), -128, 127)
.to(int8)`, as W8A8 inference pipelines do between layers. The GEMMs are exact (helpers.rows_gemm), so every result
must be eager's bits; y holds the halves where round's ties-to-even matters and the values past int8's range."""
from __future__ import annotations

import pytest
import torch

import fxfuse
import testlib
from helpers import GemmThen, rows_gemm, run_the_generated_kernel

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# halves (ties to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2), values either side of them, int8's range edges
ROWS = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, 0.75, -0.75, 127.5, 128.0, -128.5, -129.0, 300.0, -300.0, 0.0,
        3.0, -3.0, 1.25, -1.25]


@pytest.fixture(autouse=True)
def _run_the_kernel(monkeypatch):
    run_the_generated_kernel(monkeypatch)


EPILOGUES = {
    "round": torch.round, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc,
    "requantize_int8": lambda y: torch.clamp(torch.round(y * 0.5), -128, 127).to(torch.int8),
    "requantize_uint8": lambda y: torch.clamp(torch.round(y + 128), 0, 255).to(torch.uint8),
    "floor_to_int32": lambda y: torch.floor(y * 2).to(torch.int32),
}


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "f16", "f32"])
@pytest.mark.parametrize("name", list(EPILOGUES))
def test_a_rounding_epilogue_is_fused_with_eagers_bits(device, dtype, name):
    x, w = rows_gemm(ROWS, dtype, device, testlib.generator("cpu", "rounding", name))
    model = GemmThen(EPILOGUES[name])
    ep = fxfuse.rewrite(torch.export.export(model, (x, w)), only_profitable=False)
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert targets.count("fxfuse.gemm_chain.default") == 1, targets
    assert not any(t.startswith(("aten.round", "aten.floor", "aten.ceil", "aten.trunc")) for t in targets), targets
    got, want = ep.module()(x, w), model(x, w)
    assert got.dtype == want.dtype
    assert torch.equal(got, want), (got[:len(ROWS), 0], want[:len(ROWS), 0])
