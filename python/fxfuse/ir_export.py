"""fx.Graph → fxfuse IR text (docs/ir.md).

Node names are the FX node names, so the names in the pass's plan map straight back onto the
graph. Types come from ``node.meta["val"]`` (FakeTensor, SymInt, tuples of them) and, where
that is absent, from ``node.meta["tensor_meta"]``; a node with neither is typed ``?``.
"""
from __future__ import annotations

import math
import re
from typing import Any

import sympy
import torch
import torch.fx
from torch.utils._sympy.functions import FloorDiv

__all__ = ["graph_to_ir", "DTYPE_NAMES", "dtype_name", "format_dim", "format_float"]

DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.bool: "bool",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
}
for _attr, _name in (("float8_e4m3fn", "f8e4m3"), ("float8_e5m2", "f8e5m2")):
    if hasattr(torch, _attr):
        DTYPE_NAMES[getattr(torch, _attr)] = _name

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


def dtype_name(dtype: torch.dtype) -> str:
    """The IR/spec name of a dtype; dtypes outside the spec table read as ``enum(...)``-safe
    names (``complex64``) so the pass can still parse the graph and reject the node."""
    return DTYPE_NAMES.get(dtype) or str(dtype).rsplit(".", 1)[-1]


def format_float(x: float) -> str:
    """``%.17g`` with ``.0`` appended when it would read as an int: round-trips exactly."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = "%.17g" % x
    return text if any(c in text for c in ".e") else text + ".0"


def _exact_floor_divisions(expr):
    """expr with each floor division that divides exactly written as its quotient: a view's dim Inductor writes as
    ``(s**2)//s`` is ``s``, which the pass compares with the product's rows by text (session 58's hunt: such a 3-D
    linear was not fused where B == S under duck sizing, or with Dims {0: B, 1: 2*B}). Other divisions stay."""
    if not expr.has(FloorDiv):
        return expr
    quotient = expr.replace(FloorDiv, lambda a, b: sympy.floor(a / b))
    return expr if quotient.has(sympy.floor) else quotient


def format_dim(d: Any) -> str:
    """An int, a symbol name (``s0``) or a parenthesized expression (``(s0*4096)``).

    The grammar's expression text may not contain ``)``; function-style sympy
    expressions (``Max(1, s0)``) are written with ``[]`` instead of ``()`` inside.
    """
    if isinstance(d, torch.SymInt):
        expr = _exact_floor_divisions(d.node.expr)
        if getattr(expr, "is_Integer", False):
            return str(int(expr))
        text = str(expr).replace(" ", "")
        if _NAME_RE.match(text):
            return text
        return "(" + text.replace("(", "[").replace(")", "]") + ")"
    return str(int(d))


def _string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _tensor_type(shape, stride, dtype, device) -> str:
    text = f"{dtype_name(dtype)}[{','.join(format_dim(d) for d in shape)}]"
    if stride is not None:
        text += "{" + ",".join(format_dim(s) for s in stride) + "}"
    if device is not None:
        text += f"@{device}"
    return text


def _type_of_value(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        try:
            stride = v.stride()
        except (RuntimeError, NotImplementedError):  # sparse / nested layouts
            stride = None
        return _tensor_type(v.shape, stride, v.dtype, v.device)
    if isinstance(v, (list, tuple)):
        if not v:
            return "?"
        return "(" + ", ".join(_type_of_value(x) for x in v) + ")"
    if v is None:
        return "none"
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
        return "sym"
    return "?"


def _type_of_tensor_meta(tm: Any) -> str:
    if isinstance(tm, (list, tuple)):
        if not tm:
            return "?"
        return "(" + ", ".join(_type_of_tensor_meta(x) for x in tm) + ")"
    if tm is None:
        return "none"
    shape = getattr(tm, "shape", None)
    dtype = getattr(tm, "dtype", None)
    if shape is None or dtype is None:
        return "?"
    return _tensor_type(shape, getattr(tm, "stride", None), dtype, None)


def node_type(node: torch.fx.Node) -> str:
    if "val" in node.meta:
        return _type_of_value(node.meta["val"])
    if node.meta.get("tensor_meta") is not None:
        return _type_of_tensor_meta(node.meta["tensor_meta"])
    return "?"


def target_name(target: Any) -> str:
    """``aten.mm.default``, ``prims.convert_element_type.default``, ``operator.getitem``."""
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return f"{target._qualified_op_name.replace('::', '.')}"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    if isinstance(target, str):
        name = target
    else:
        module = getattr(target, "__module__", None) or ""
        module = {"_operator": "operator", "builtins": "builtins"}.get(module, module)
        qual = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
        name = f"{module}.{qual}" if module and qual else str(target)
    name = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    if not name or not (name[0].isalpha() or name[0] == "_"):
        name = "_" + name
    return name


def format_arg(a: Any) -> str:
    if isinstance(a, torch.fx.Node):
        return "%" + a.name
    if isinstance(a, bool):
        return "true" if a else "false"
    if isinstance(a, int):
        return str(a)
    if isinstance(a, float):
        return format_float(a)
    if isinstance(a, str):
        return _string(a)
    if isinstance(a, torch.dtype):
        return dtype_name(a)
    if isinstance(a, torch.device):
        return f"device({a})"
    if isinstance(a, (torch.layout, torch.memory_format)):
        return f"enum({str(a).rsplit('.', 1)[-1]})"
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(format_arg(x) for x in a) + "]"
    if a is None:
        return "none"
    if isinstance(a, torch.SymInt):
        return f"sym({format_dim(a)})"
    if isinstance(a, (torch.SymFloat, torch.SymBool)):
        return f"sym(({str(a.node.expr).replace(' ', '').replace('(', '[').replace(')', ']')}))"
    if isinstance(a, slice) or a is Ellipsis:
        return _string(repr(a))
    name = getattr(a, "name", None)  # Python enums (e.g. ScalarType-like)
    if isinstance(name, str) and _NAME_RE.match(name):
        return f"enum({name})"
    return _string(repr(a))


# A tensor whose elements the IR writes out in full (GPTQ's shift table holds 8): the pass folds on small integer
# tables only, and each is written again in the chain's `expect` line and checked by the op at each call.
MAX_LISTED_VALUES = 64
_INTEGER_DTYPES = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)


def known_values_text(t: Any) -> str:
    """What the IR says of a buffer's or constant's contents (docs/ir.md): `` values [..]`` for a small integer
    tensor, `` kgroups G`` for a 1-D integer tensor that is ``arange(K) // G`` (GPTQ's g_idx without act-order),
    else nothing. The pass folds on these facts; the op checks them again at each call (spec ``expect``)."""
    if not isinstance(t, torch.Tensor) or t.dtype not in _INTEGER_DTYPES or t.is_sparse or t.numel() == 0:
        return ""
    if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        return ""  # a FakeTensor or another subclass: no values to read
    if t.numel() > MAX_LISTED_VALUES and t.dim() != 1:
        return ""  # a weight: not copied to the host
    try:
        flat = t.detach().reshape(-1).to("cpu", torch.int64)
    except (RuntimeError, NotImplementedError):
        return ""
    # a 1-D table of k's groups by its rule first, short ones too (a g_idx of 64 k: `t[g_idx]` folds only on the rule)
    if t.dim() == 1 and int(flat[0]) == 0:
        group = int((flat == 0).sum())
        if int(flat[-1]) == (flat.numel() - 1) // group and \
                torch.equal(flat, torch.arange(flat.numel(), dtype=torch.int64) // group):
            return f" kgroups {group}"
    if flat.numel() <= MAX_LISTED_VALUES:
        return " values [" + ", ".join(str(int(v)) for v in flat.tolist()) + "]"
    return ""


def _known_attr(node: torch.fx.Node) -> str:
    owner = node.graph.owning_module
    obj: Any = owner
    for part in str(node.target).split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return ""
    return known_values_text(obj)


def _node_line(node: torch.fx.Node, known_values: dict[str, Any]) -> str:
    if node.op == "output":
        outs = node.args[0]
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return f"  output ({', '.join(format_arg(o) for o in outs)})"
    ty = node_type(node)
    if node.op == "placeholder":
        rhs = "placeholder" + known_values_text(known_values.get(node.name))
    elif node.op == "get_attr":
        rhs = f"get_attr {_string(str(node.target))}" + _known_attr(node)
    elif node.op == "call_function":
        args = [format_arg(a) for a in node.args]
        args += [f"{k}={format_arg(v)}" for k, v in node.kwargs.items()]
        rhs = f"{target_name(node.target)}({', '.join(args)})"
    else:  # call_method / call_module: opaque to the pass, but keep the edges
        args = [format_arg(a) for a in node.args]
        args += [f"{k}={format_arg(v)}" for k, v in node.kwargs.items()]
        rhs = f"{node.op}.{target_name(node.target)}({', '.join(args)})"
    return f"  %{node.name} : {ty} = {rhs}"


def graph_to_ir(graph: torch.fx.Graph, known_values: dict[str, Any] | None = None) -> str:
    """The whole graph as IR text, one node per line, ending with a newline. ``known_values``: placeholder name ->
    the tensor it is bound to (an ExportedProgram's buffers and constants), whose contents the IR may state."""
    known = known_values or {}
    lines = ["graph {"]
    lines += [_node_line(n, known) for n in graph.nodes]
    lines.append("}")
    return "\n".join(lines) + "\n"
