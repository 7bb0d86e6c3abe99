"""torch.round(y, decimals=d) in the torch.compile backend's graphs.

Inductor decomposes it before the post-grad passes run into ``mul(y, 10.0**d) -> round -> mul(1.0 / 10.0**d)``, each
in y's dtype, where eager's one kernel computes nearbyint(y * 10^d) / 10^d in f32 on the CPU (a bf16 result was one
step off eager at a tenth of the elements, session 56's hunt) and in the tensor's own type on CUDA. The same three
ops written by the user are a different function (each rounded as eager rounds it), and only the nodes' provenance,
``meta["original_aten"]``, tells them apart. So, around the pass: each such trio that came from
``aten.round.decimals`` is collapsed into that one node, which the pass lowers to eager's formula
(pass/round_decimals.h); a collapsed node that no chain took is expanded back into Inductor's trio afterwards,
since Inductor cannot lower ``aten.round.decimals`` itself once its decompositions have run
(collapsed_groups.expand_unfused).
"""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from .collapsed_groups import Collapsed, collapse_into, original_aten

__all__ = ["collapse"]

_aten = torch.ops.aten
_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_MAX_DECIMALS = 22  # 10.0**d exact in a double (as pass/round_decimals.cpp lowers it)


def _from_round_decimals(n: torch.fx.Node) -> bool:
    return original_aten(n) == "aten.round.decimals"


def _decimals(scale: Any, unscale: Any) -> int | None:
    """d with scale == 10.0**d and unscale == 1.0 / 10.0**d (Inductor's round_dec), else None."""
    if not isinstance(scale, float) or not isinstance(unscale, float):
        return None
    for d in range(-_MAX_DECIMALS, _MAX_DECIMALS + 1):
        if d != 0 and scale == 10.0 ** d and unscale == 1.0 / 10.0 ** d:
            return d
    return None


def collapse(graph: torch.fx.Graph) -> list[Collapsed]:
    """Replaces each of Inductor's round_dec trios in `graph` by one ``aten.round.decimals`` node."""
    done = []
    for last in list(graph.nodes):
        if not (_from_round_decimals(last) and last.target is _aten.mul.Tensor and len(last.args) == 2):
            continue
        rounded, unscale = last.args
        if not (isinstance(rounded, torch.fx.Node) and _from_round_decimals(rounded)
                and rounded.target is _aten.round.default and len(rounded.users) == 1):
            continue
        first = rounded.args[0]
        if not (isinstance(first, torch.fx.Node) and _from_round_decimals(first) and first.target is _aten.mul.Tensor
                and len(first.args) == 2 and len(first.users) == 1 and isinstance(first.args[0], torch.fx.Node)):
            continue
        x, scale = first.args
        d = _decimals(scale, unscale)
        val = last.meta.get("val")
        if d is None or not isinstance(val, torch.Tensor) or val.dtype not in _DTYPES:
            continue
        done.append(collapse_into(graph, [first, rounded, last], x, _aten.round.decimals, (x,), {"decimals": d}))
    return done
