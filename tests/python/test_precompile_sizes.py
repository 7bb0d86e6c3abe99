"""Options.precompile_sizes: each fused chain whose inputs have a symbolic dim also compiles its
kernels at the given sizes while the model compiles (the op picks its kernel by M at run time),
every symbol of a shape, stride or offset set to the size; chains without one compile at their
shape only. No GPU needed: the pass runs on an exported CPU graph and the jobs' stand-ins are
checked, then `_C.precompile` is replaced to see what the pass asks to compile."""
from __future__ import annotations

import pytest
import torch

from fxfuse.pass_driver import Options, _empty_like_meta, precompile_jobs, run_on_graph


class _Chain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64, 48))
        self.b = torch.nn.Parameter(torch.randn(48))

    def forward(self, x, r):
        return torch.relu(x @ self.w + self.b) + r


def _fused_graph(dynamic: bool):
    batch = torch.export.Dim("batch", min=2, max=4096)
    shapes = {"x": {0: batch}, "r": {0: batch}} if dynamic else None
    ep = torch.export.export(_Chain(), (torch.randn(8, 64), torch.randn(8, 48)), dynamic_shapes=shapes)
    res = run_on_graph(ep.graph_module.graph, Options(precompile=False, only_profitable=False), "precompile-sizes")
    assert res.applied.fused_nodes, res.report_text
    return res


def test_sizes_are_validated_and_kept_sorted_once():
    assert Options(precompile_sizes=[64, 1, 64, 4096]).precompile_sizes == (1, 64, 4096)
    assert Options().precompile_sizes == ()
    for bad in ([0], [-16], [1.5], ["16"], [True], "16"):
        with pytest.raises(ValueError, match="precompile_sizes"):
            Options(precompile_sizes=bad)


def test_a_symbolic_chain_gets_one_job_per_size_with_every_symbol_at_the_size():
    res = _fused_graph(dynamic=True)
    at_hints, sized = precompile_jobs(res.applied, (1, 16, 3000), device_type="cpu")
    assert len(at_hints) == 1 and len(sized) == 3
    rid, spec, vals = at_hints[0]
    assert [job[:2] for job in sized] == [(rid, spec)] * 3
    assert any(isinstance(d, torch.SymInt) for v in vals for d in v.shape)
    for (_, _, (metas, size)), want in zip(sized, (1, 16, 3000)):
        assert size == want
        stand_ins = _empty_like_meta(metas, size)
        # x [batch, 64] and r [batch, 48] at the size (both carry the one symbol), the weight's and
        # bias's shapes and strides as they are; rows follow the batch through their strides
        by_cols = {t.shape[-1]: t for t in stand_ins if t.dim() == 2 and t.shape[0] == size}
        assert set(by_cols) >= {64, 48}, [tuple(t.shape) for t in stand_ins]
        for t in by_cols.values():
            assert t.stride() == (t.shape[1], 1)
        for t, meta in zip(stand_ins, metas):
            if not any(isinstance(d, torch.SymInt) for d in meta.shape):
                assert tuple(t.shape) == tuple(meta.shape) and t.stride() == meta.stride()
    # without sizes: the hints only, as before
    assert precompile_jobs(res.applied, (), device_type="cpu") == (at_hints, [])


def test_a_static_chain_compiles_at_its_shape_only():
    res = _fused_graph(dynamic=False)
    at_hints, sized = precompile_jobs(res.applied, (1, 16), device_type="cpu")
    assert len(at_hints) == 1 and sized == []
    # chains on another device than asked make no jobs (the pass compiles CUDA chains only)
    assert precompile_jobs(res.applied, (1, 16)) == ([], [])


def test_the_pass_asks_the_op_to_compile_every_size(monkeypatch):
    """The whole path: run_on_graph with precompile on calls `_C.precompile` once at the hints
    and once per size, with stand-ins of those sizes (the CUDA filter widened to this CPU graph)."""
    import fxfuse._C as C
    from fxfuse import pass_driver

    calls = []
    monkeypatch.setattr(C, "precompile", lambda inputs, spec: calls.append([tuple(t.shape) for t in inputs]))
    real_jobs = pass_driver.precompile_jobs
    monkeypatch.setattr(pass_driver, "precompile_jobs", lambda result, sizes: real_jobs(result, sizes, "cpu"))
    batch = torch.export.Dim("batch", min=2, max=4096)
    ep = torch.export.export(_Chain(), (torch.randn(8, 64), torch.randn(8, 48)),
                             dynamic_shapes={"x": {0: batch}, "r": {0: batch}})
    run_on_graph(ep.graph_module.graph, Options(only_profitable=False, precompile_sizes=(2, 512)), "precompile-sizes")
    rows = sorted({shape[0] for call in calls for shape in call if len(shape) == 2 and shape[1] in (64, 48)
                   and shape != (64, 48)})
    assert len(calls) == 3, calls
    assert rows == [2, 8, 512], calls  # the hint (8, the example's batch) and both sizes
    calls.clear()
    run_on_graph(ep.graph_module.graph, Options(only_profitable=False, precompile=False, precompile_sizes=(2, 512)),
                 "precompile-sizes")
    assert calls == []  # precompile off: nothing compiles, sizes or not
