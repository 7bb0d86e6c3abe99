"""Eager's GEMMs with one fixed summation order: every output element summed over K one term at a
time, k = 0, 1, ..., K-1 (the textbook recursive sum, as a kernel that keeps one accumulator per
element computes it). A correct float32 evaluation like cuBLAS's or MKL's blocked ones, with
another rounding: the differential judge uses it as one more sample of eager's error
(diff_harness.other_eager_orders). Only float32 GEMMs are re-ordered; others run as usual.

``Case.build(sequential_gemm=True)`` evaluates a chain with the namespaces below in place of
``torch`` and ``F``.
"""
from __future__ import annotations

import types

import torch
import torch.nn.functional as F


def _sequential_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype != torch.float32 or b.dtype != torch.float32 or a.dim() < 2 or b.dim() < 2:
        return torch.matmul(a, b)
    K = a.shape[-1]
    acc = torch.zeros(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]),
                      dtype=torch.float32, device=a.device)
    for k in range(K):
        acc = torch.addcmul(acc, a[..., :, k:k + 1], b[..., k:k + 1, :])
    return acc


def _addmm(c, a, b, *, beta=1.0, alpha=1.0):
    if a.dtype != torch.float32:
        return torch.addmm(c, a, b, beta=beta, alpha=alpha)
    return beta * c + alpha * _sequential_matmul(a, b)


def _linear(x, w, bias=None):
    if x.dtype != torch.float32:
        return F.linear(x, w, bias)
    y = _sequential_matmul(x, w.transpose(-1, -2))
    return y if bias is None else y + bias


class _Namespace(types.SimpleNamespace):
    def __init__(self, base, **overrides):
        super().__init__(**overrides)
        self._base = base

    def __getattr__(self, name):  # everything not overridden: the real module's
        return getattr(self._base, name)


TORCH = _Namespace(torch, mm=_sequential_matmul, bmm=_sequential_matmul, matmul=_sequential_matmul, addmm=_addmm)
FUNCTIONAL = _Namespace(F, linear=_linear)
