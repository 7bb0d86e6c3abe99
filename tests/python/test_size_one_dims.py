"""End to end (export → [run_decompositions] → fxfuse.rewrite → run) for problem dims of size 1
(BUG-1: they must keep their b/m/n names, or the op cannot infer the problem shape) and for
prologue inputs that broadcast over part of a flattened M (BUG-2: not folded)."""
from __future__ import annotations

import pytest
import torch
from testlib import Fn

import fxfuse

pytestmark = pytest.mark.needs_real_pass


def _rewrite_and_run(fn, args, decompose):
    ep = torch.export.export(Fn(fn), args)
    if decompose:
        ep = ep.run_decompositions()
    ep2 = fxfuse.rewrite(ep)
    rep = fxfuse.report(ep)
    fused = [n for n in ep2.graph.nodes if n.target == torch.ops.fxfuse.gemm_chain.default]
    return ep2.module()(*args), fused, rep


def _i8(*shape):
    return torch.randint(-8, 8, shape, dtype=torch.int8)


@pytest.mark.parametrize("decompose", [False, True], ids=["export", "decomp"])
@pytest.mark.parametrize("B,M,K,N", [(1, 2, 2, 1), (2, 2, 2, 1), (1, 1, 3, 1), (1, 1, 1, 1), (3, 1, 4, 5)])
def test_bmm_with_size_one_dims(B, M, K, N, decompose):
    """BUG-1 repro and its neighbours: `x0.transpose(-1,-2).float() @ x2.float()`."""
    def fn(x0, x2):
        return torch.relu(x0.transpose(-1, -2).float() @ x2.float())

    args = (torch.randn(B, K, M).bfloat16(), _i8(K, N))
    out, fused, rep = _rewrite_and_run(fn, args, decompose)
    assert not [e for e in rep.rejected if e.get("reason") == "apply_rejected"], str(rep)
    assert fused, str(rep)
    torch.testing.assert_close(out, fn(*args))


@pytest.mark.parametrize("decompose", [False, True], ids=["export", "decomp"])
@pytest.mark.parametrize("B,S,K,N", [(2, 1, 1, 1), (2, 3, 4, 5), (1, 3, 4, 5), (2, 1, 4, 5)])
def test_zero_point_over_part_of_m(B, S, K, N, decompose):
    """BUG-2: `relu((x[B,S,K] - zp[S,1]) @ w)`. zp varies along S only: with S > 1 it cannot be
    an input of the chain (left unfused); with S = 1 it is constant along M and fuses."""
    def fn(x0, x1, x3):
        return torch.relu((x0 - x1) @ x3)

    args = (torch.randn(B, S, K), torch.randn(S, 1), torch.randn(K, N))
    out, fused, rep = _rewrite_and_run(fn, args, decompose)
    assert not [e for e in rep.rejected if e.get("reason") == "apply_rejected"], str(rep)
    assert fused, str(rep)
    torch.testing.assert_close(out, fn(*args))
    spec = fused[0].args[1]
    assert ("sub" in spec) == (S == 1), spec


@pytest.mark.parametrize("B,S", [(2, 3), (2, 1), (1, 3)])
def test_residual_over_part_of_m(B, S):
    """Output space: a residual [S,N] of a [B,S,N] linear joins the chain only when it covers
    every M dim that is not 1."""
    w = torch.randn(16, 8)

    def fn(x, r):
        return torch.relu(torch.nn.functional.linear(x, w) + r)

    args = (torch.randn(B, S, 8), torch.randn(S, 16))
    out, fused, rep = _rewrite_and_run(fn, args, decompose=True)
    assert not [e for e in rep.rejected if e.get("reason") == "apply_rejected"], str(rep)
    torch.testing.assert_close(out, fn(*args))
