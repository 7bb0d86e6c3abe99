"""Options.precompile_sizes: each fused chain whose M (its rows: batch x sequence) is c x one
symbol also compiles its kernels at the given M values while the model compiles (the op picks its
kernel by M at run time): the symbol set to M / c in every shape, stride and offset, other symbols
at their hints; sizes c does not divide or outside the symbol's range are skipped, and a chain
whose M has no symbol or several compiles at its hints only. No GPU needed: the pass runs on
exported CPU graphs and the jobs' stand-ins are checked, then `_C.precompile` is replaced to see
what the pass asks to compile."""
from __future__ import annotations

import pytest
import torch

from fxfuse.pass_driver import Options, run_on_graph
from fxfuse.precompile import empty_like_meta, precompile_jobs


class _Chain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64, 48))
        self.b = torch.nn.Parameter(torch.randn(48))

    def forward(self, x, r):
        return torch.relu(x @ self.w + self.b) + r


def _fused_graph(x_shape, dynamic: dict[int, torch.export.Dim] | None):
    """The pass on the exported chain, x of ``x_shape`` ([..., 64]) and r alike ([..., 48]), with
    ``dynamic`` dims of both."""
    shapes = {"x": dynamic, "r": dynamic} if dynamic else None
    args = (torch.randn(*x_shape), torch.randn(*x_shape[:-1], 48))
    ep = torch.export.export(_Chain(), args, dynamic_shapes=shapes)
    res = run_on_graph(ep.graph_module.graph, Options(precompile=False, only_profitable=False), "precompile-sizes")
    assert res.applied.fused_nodes, res.report_text
    return res


def _rows(stand_ins):
    """(M, x) of the stand-ins: x is the one input whose last dim is 64 (the weight is [64, 48])."""
    (x,) = [t for t in stand_ins if t.shape[-1] == 64]
    return x.numel() // 64, x


def test_sizes_are_validated_and_kept_sorted_once():
    assert Options(precompile_sizes=[64, 1, 64, 4096]).precompile_sizes == (1, 64, 4096)
    assert Options(precompile_sizes=(v for v in (2, 1))).precompile_sizes == (1, 2)  # a generator, read once
    assert Options().precompile_sizes == ()
    for bad in ([0], [-16], [1.5], ["16"], [True], "16", None, 16):
        with pytest.raises(ValueError, match="precompile_sizes"):
            Options(precompile_sizes=bad)


def test_one_job_per_size_m_can_take_with_the_symbol_at_the_size():
    res = _fused_graph((8, 64), {0: torch.export.Dim("batch", min=2, max=4096)})
    # 1 is under the Dim's minimum, 5000 over its maximum: skipped
    at_hints, sized = precompile_jobs(res.applied, (1, 16, 3000, 5000), device_type="cpu")
    assert len(at_hints) == 1 and len(sized) == 2
    rid, spec, metas = at_hints[0]
    assert [job[:2] for job in sized] == [(rid, spec)] * 2
    assert _rows(empty_like_meta(metas))[0] == 8  # the example's batch: the hint
    for (_, _, (job_metas, values)), want in zip(sized, (16, 3000)):
        stand_ins = empty_like_meta(job_metas, values)
        m, x = _rows(stand_ins)
        assert m == want and x.stride() == (64, 1)
        # r [batch, 48] follows the same symbol; the weight and bias stay as they are
        assert any(t.shape == (want, 48) and t.stride() == (48, 1) for t in stand_ins)
        for t, meta in zip(stand_ins, job_metas):
            if not any(isinstance(d, torch.SymInt) for d in meta.shape):
                assert tuple(t.shape) == tuple(meta.shape) and t.stride() == meta.stride()
    # without sizes: the hints only, as before
    assert precompile_jobs(res.applied, (), device_type="cpu") == (at_hints, [])


def test_a_dim_without_an_upper_bound_takes_every_size_from_its_minimum():
    # no max: the symbol's range ends at torch's int_oo (torch.compile's dynamic=True dims too), which
    # precompile once read as finite and failed to convert, skipping every size with a warning
    res = _fused_graph((8, 64), {0: torch.export.Dim("batch", min=2)})
    _, sized = precompile_jobs(res.applied, (1, 3, 100, 1 << 20), device_type="cpu")
    assert [_rows(empty_like_meta(*job[2]))[0] for job in sized] == [3, 100, 1 << 20]


def test_m_of_a_batch_times_a_fixed_sequence_divides_by_the_sequence():
    # x [batch, 4, 64]: M = 4 x batch; M = 64 -> batch 16, M = 66 is not a multiple of 4: skipped
    res = _fused_graph((3, 4, 64), {0: torch.export.Dim("batch", min=2, max=1024)})
    _, sized = precompile_jobs(res.applied, (64, 66, 400), device_type="cpu")
    assert [_rows(empty_like_meta(*job[2]))[0] for job in sized] == [64, 400]
    assert _rows(empty_like_meta(*sized[0][2]))[1].shape == (16, 4, 64)


def test_m_with_two_symbols_or_none_compiles_at_the_hints_only():
    two = _fused_graph((3, 5, 64), {0: torch.export.Dim("batch", min=2, max=64),
                                    1: torch.export.Dim("seq", min=2, max=512)})
    at_hints, sized = precompile_jobs(two.applied, (16, 512), device_type="cpu")
    assert len(at_hints) == 1 and sized == []  # M = batch x seq: which size each takes is unknown
    static = _fused_graph((8, 64), None)
    at_hints, sized = precompile_jobs(static.applied, (1, 16), device_type="cpu")
    assert len(at_hints) == 1 and sized == []
    # chains on another device than asked make no jobs (the pass compiles CUDA chains only)
    assert precompile_jobs(static.applied, (1, 16)) == ([], [])


def _dynamic_batch_on_cpu(monkeypatch):
    """The chain exported with a dynamic batch (hint 8), and the pass's precompile jobs taken from
    its CPU graph (the CUDA filter widened)."""
    from fxfuse import precompile

    real_jobs = precompile.precompile_jobs
    monkeypatch.setattr(precompile, "precompile_jobs", lambda result, sizes: real_jobs(result, sizes, "cpu"))
    batch = torch.export.Dim("batch", min=2, max=4096)
    return torch.export.export(_Chain(), (torch.randn(8, 64), torch.randn(8, 48)),
                               dynamic_shapes={"x": {0: batch}, "r": {0: batch}})


def test_the_pass_asks_the_op_to_compile_every_size(monkeypatch):
    """The whole path: run_on_graph with precompile on calls `_C.precompile` once at the hints
    and once per size, with stand-ins of those sizes (the CUDA filter widened to this CPU graph)."""
    import fxfuse._C as C

    calls = []
    monkeypatch.setattr(C, "precompile", lambda inputs, spec: calls.append([tuple(t.shape) for t in inputs]))
    ep = _dynamic_batch_on_cpu(monkeypatch)
    run_on_graph(ep.graph_module.graph, Options(only_profitable=False, precompile_sizes=(2, 512)), "precompile-sizes")
    rows = sorted({shape[0] for call in calls for shape in call if len(shape) == 2 and shape[1] in (64, 48)
                   and shape != (64, 48)})
    assert len(calls) == 3, calls
    assert rows == [2, 8, 512], calls  # the hint (8, the example's batch) and both sizes
    calls.clear()
    run_on_graph(ep.graph_module.graph, Options(only_profitable=False, precompile=False, precompile_sizes=(2, 512)),
                 "precompile-sizes")
    assert calls == []  # precompile off: nothing compiles, sizes or not


def test_torch_compile_dynamic_batch_compiles_every_size(monkeypatch):
    """torch.compile(dynamic=True), the way users ask for it: the batch's range has no upper bound (int_oo), and
    every listed size still compiles (session 52: none did, with a warning), beside the example's hint."""
    import fxfuse
    import fxfuse._C as C
    from fxfuse import precompile

    calls = []
    monkeypatch.setattr(C, "precompile", lambda inputs, spec: calls.append(
        sorted({t.shape[0] for t in inputs if t.dim() == 2 and t.shape[1] in (64, 48) and tuple(t.shape) != (64, 48)})))
    real_jobs = precompile.precompile_jobs
    monkeypatch.setattr(precompile, "precompile_jobs", lambda result, sizes: real_jobs(result, sizes, "cpu"))
    torch._dynamo.reset()
    compiled = torch.compile(_Chain(), backend=fxfuse.backend_with(only_profitable=False, precompile_sizes=(3, 100)),
                             dynamic=True)
    x, r = torch.randn(17, 64), torch.randn(17, 48)
    with torch.no_grad():
        compiled(x, r)
    assert sorted(calls) == [[3], [17], [100]], calls


def test_with_background_compiles_the_sizes_are_queued_and_the_hints_compiled(monkeypatch):
    """Background compiles on: the hints' kernels still compile before the model's compile returns
    (a CUDA graph capture needs them), the other sizes' are handed to the background."""
    import fxfuse._C as C

    calls = []
    monkeypatch.setattr(C, "precompile", lambda inputs, spec, background=False: calls.append(
        (sorted({t.shape[0] for t in inputs if t.dim() == 2 and t.shape[1] in (64, 48) and tuple(t.shape) != (64, 48)}),
         background)))
    monkeypatch.setattr(C, "background_compile", lambda: True)
    ep = _dynamic_batch_on_cpu(monkeypatch)
    run_on_graph(ep.graph_module.graph, Options(only_profitable=False, precompile_sizes=(2, 512)), "precompile-sizes")
    assert sorted(calls) == [([2], True), ([8], False), ([512], True)], calls
