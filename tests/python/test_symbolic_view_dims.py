"""A 3-D linear whose output view's dim is written as an exact floor division, `(s**2)//s`, as Inductor and export
write it where the batch and sequence sizes share a symbol (duck sizing, or Dims {0: B, 1: B} / {0: B, 1: 2*B}):
the IR writes it as its quotient (ir_export.format_dim) and apply_plan compares it so (apply_plan._same_shape).
Session 58's hunt: such a linear was not fused, and its graph kept serving every later B == S call."""
from __future__ import annotations


import pytest
import torch
import torch.nn.functional as F
from torch.export import Dim

import fxfuse
import testlib


class LinearGelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(32, 48)

    def forward(self, x):
        return F.gelu(self.lin(x)) + 1


@pytest.mark.needs_real_pass
def test_a_duck_sized_batch_and_sequence_fuse_under_torch_compile(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    g = testlib.generator("cpu", "duck_sized_view")
    model = LinearGelu().bfloat16().eval()
    torch._dynamo.reset()
    fxfuse.reset_stats()
    compiled = torch.compile(model, backend="fxfuse", dynamic=True)
    with torch.no_grad():
        for shape in ((2, 2, 32), (4, 4, 32), (3, 5, 32)):
            x = torch.randn(*shape, generator=g).bfloat16()
            torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)
    assert fxfuse.stats()["rejections"] == {}, str(fxfuse.report())
    assert fxfuse.stats()["chains_fused"] >= 1


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("seq", ["B", "2B"])
def test_export_dims_sharing_a_symbol_fuse_after_decompositions(seq):
    g = testlib.generator("cpu", "shared_symbol_view", seq)
    model = LinearGelu().bfloat16().eval()
    B = Dim("B", min=2, max=512)
    x = torch.randn(4, 4 if seq == "B" else 8, 32, generator=g).bfloat16()
    spec = {0: B, 1: B if seq == "B" else 2 * B}
    ep = torch.export.export(model, (x,), dynamic_shapes={"x": spec}).run_decompositions()
    fxfuse.reset_stats()
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert fxfuse.stats()["chains_fused"] == 1, fxfuse.stats()["rejections"]
    x2 = torch.randn(6, 6 if seq == "B" else 12, 32, generator=g).bfloat16()
    with torch.no_grad():
        torch.testing.assert_close(ep2.module()(x2), model(x2), rtol=0, atol=0)
