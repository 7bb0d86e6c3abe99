"""A 3-D nn.Linear in the torch.compile backend's training graphs.

Inductor hands the pass `view(x, [B*S, K]) -> addmm -> view(out, [B, S, N]) -> epilogue`. The pass takes the two
views as the GEMM's own (pass/gemm_anchor.cpp absorbLeadingViews) only where the product's one user is the second
view. In a forward graph of training the product is also saved for the backward (a graph output), so nothing
fused: every 3-D linear's bias + activation stayed unfused under torch.compile in training (session 57). Before the
pass each other user of such a product reads it through the view instead, `reshape(view(out, [B, S, N]), [B*S, N])`:
the same elements (both views of the one contiguous product), so the graph computes what it did, and the pass can
take the views and give the product to those users as an extra output of the chain.
"""
from __future__ import annotations

import torch
import torch.fx

__all__ = ["read_products_through_their_view"]

_aten = torch.ops.aten
_GEMMS = (_aten.mm.default, _aten.addmm.default)
_RESHAPES = (_aten.view.default, _aten.reshape.default, _aten._unsafe_view.default)


def _val(n: torch.fx.Node):
    v = n.meta.get("val")
    return v if isinstance(v, torch.Tensor) else None


def _out_view(product: torch.fx.Node) -> torch.fx.Node | None:
    """The product's view back to the input's leading dims ([B*S, N] -> [B, S, N]), where its A operand is the
    matching view of a 3-D (or higher) x; else None."""
    a = product.args[1] if product.target is _aten.addmm.default else product.args[0]
    pv = _val(product)
    if not (isinstance(a, torch.fx.Node) and a.target in _RESHAPES and pv is not None and pv.dim() == 2):
        return None
    x = a.args[0] if isinstance(a.args[0], torch.fx.Node) else None
    xv = _val(x) if x is not None else None
    if xv is None or xv.dim() < 3:
        return None
    for u in product.users:
        uv = _val(u)
        if (u.target in _RESHAPES and u.args[0] is product and uv is not None
                and tuple(uv.shape) == tuple(xv.shape[:-1]) + (pv.shape[-1],)):
            return u
    return None


def read_products_through_their_view(graph: torch.fx.Graph) -> int:
    """Reroutes the other users of each 3-D linear's product through its output view; returns how many products."""
    count = 0
    order = {n: i for i, n in enumerate(graph.nodes)}  # the original nodes' order (a product's users are among them)
    for product in list(graph.nodes):
        if product.op != "call_function" or product.target not in _GEMMS or len(product.users) < 2:
            continue
        view = _out_view(product)
        if view is None or not _val(product).is_contiguous():
            continue
        if any(order[u] < order[view] for u in product.users if u is not view):
            continue  # a user before the view could not read through it (review, session 57: the graph lost its order)
        # [-1, N], not the product's sizes: under dynamic shapes those are SymInts, which a node's arguments must not
        # hold raw (torch warns; session 58's hunt). N is the weight's, a number where it is not symbolic itself.
        n = _val(product).shape[-1]
        sizes = [-1, n] if isinstance(n, int) else list(_val(product).shape)
        with graph.inserting_after(view):
            flat = graph.call_function(_aten.reshape.default, (view, sizes))
        flat.meta = {k: v for k, v in product.meta.items() if k in ("val", "tensor_meta", "stack_trace", "seq_nr")}
        product.replace_all_uses_with(flat, delete_user_cb=lambda u: u is not view)
        count += 1
    return count
