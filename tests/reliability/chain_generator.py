"""Random prologue → GEMM → epilogue chains as plain PyTorch functions, for differential testing.

A :class:`Case` is plain data (JSON round-trips it), so a failing case can be printed, shrunk
and pasted into ``test_regressions.py`` as a literal. From it we build:

- ``case.source()``: the text of a Python function ``chain(x0, x1, ...)`` that uses only ordinary
  torch ops (what a user writes); dtypes inside it are the globals ``D`` (the compute dtype) and
  ``F`` (an fp32 upcast), so the same text evaluates in float64 with ``D = F = torch.float64``;
- ``case.make_inputs(device)``: the input tensors, deterministic from ``case.seed``; an input may
  be a raw int8/fp8/f16/bf16 tensor (dequantized in the graph), a non-contiguous view, a 0-d
  tensor, a row/column vector or a residual;
- ``case.reference_inputs(inputs)``: the same inputs for the float64 reference (inputs in the
  compute dtype become float64, raw quantized inputs stay raw: their conversion is exact).

Nothing here imports fxfuse: the generator is usable (and tested) without the extension.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F  # noqa: F401 - used by generated sources

DTYPES: dict[str, torch.dtype] = {
    "f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64,
    "i8": torch.int8, "u8": torch.uint8, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool,
}
if hasattr(torch, "float8_e4m3fn"):
    DTYPES["f8e4m3"] = torch.float8_e4m3fn
    DTYPES["f8e5m2"] = torch.float8_e5m2

COMPUTE_DTYPES = ("f32", "bf16", "f16")


# ---------------------------------------------------------------------------------------------
# Data


@dataclass
class Input:
    """One argument of the chain function.

    ``shape`` is symbolic: each entry is a dim name ("M", "N", "K", "B", "S") or an int.
    ``store``: the storage dtype name; "D" means the compute dtype, "F" fp32 (f64 in the reference).
    ``fill``: how values are drawn: "normal" (times ``scale``), "int" (integers in
    [-``scale``, ``scale``]), "positive" (uniform in [0.5, 2] times ``scale``), "zero_point"
    (small integers as floats).
    ``layout``: "contig"; "t" (a transposed view of contiguous storage: non-contiguous input);
    "slice" (every other column of a wider tensor); "offset" (a view at storage offset 1).
    ``special``: None, "nan", "inf", "-inf": one element set to it.
    """
    name: str
    shape: list
    store: str = "D"
    fill: str = "normal"
    scale: float = 1.0
    layout: str = "contig"
    special: str | None = None


@dataclass
class Node:
    """One value of the chain: ``name = OPS[op].render(args, params)``."""
    name: str
    op: str
    args: list[str]
    params: dict = field(default_factory=dict)
    stage: str = "epilogue"   # "prologue_a", "prologue_b", "gemm", "epilogue"


@dataclass
class Case:
    seed: int
    dtype: str                       # compute dtype name (f32, bf16, f16)
    gemm: str                        # mm, addmm, linear, linear3d, bmm, matmul3d
    dims: dict                       # {"M":..,"N":..,"K":..,"B":..,"S":..}
    inputs: list[Input]
    nodes: list[Node]
    outputs: list[str]
    notes: str = ""

    # -- (de)serialization ---------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @staticmethod
    def from_dict(d: dict) -> "Case":
        d = dict(d)
        d["inputs"] = [Input(**i) for i in d["inputs"]]
        d["nodes"] = [Node(**n) for n in d["nodes"]]
        return Case(**d)

    @staticmethod
    def from_json(text: str) -> "Case":
        return Case.from_dict(json.loads(text))

    def copy(self) -> "Case":
        return Case.from_json(self.to_json())

    # -- properties ----------------------------------------------------------------------
    @property
    def K(self) -> int:
        return int(self.dims["K"])

    @property
    def discontinuous(self) -> bool:
        """Comparisons / where: a one-ulp difference upstream may flip an element."""
        return any(OPS[n.op].discontinuous for n in self.nodes)

    # -- code ----------------------------------------------------------------------------
    def source(self) -> str:
        args = ", ".join(i.name for i in self.inputs)
        lines = [f"def chain({args}):"]
        for n in self.nodes:
            lines.append(f"    {n.name} = {OPS[n.op].render(n.args, n.params)}")
        outs = ", ".join(self.outputs)
        lines.append(f"    return ({outs},)")
        return "\n".join(lines) + "\n"

    def build(self, reference: bool = False, sequential_gemm: bool = False) -> Callable:
        """The chain as a Python function; ``reference``: every float dtype is float64;
        ``sequential_gemm``: float32 GEMMs summed over K in one fixed order (sequential_gemm.py)."""
        d = torch.float64 if reference else DTYPES[self.dtype]
        f = torch.float64 if reference else torch.float32
        scope: dict[str, Any] = {"torch": torch, "F": torch.nn.functional, "D": d, "FP32": f, "math": math}
        if sequential_gemm:
            import sequential_gemm as seq
            scope.update(torch=seq.TORCH, F=seq.FUNCTIONAL)
        exec(compile(self.source(), f"<chain seed={self.seed}>", "exec"), scope)  # noqa: S102
        return scope["chain"]

    def shape_of(self, inp: Input) -> tuple[int, ...]:
        return tuple(int(self.dims[s]) if isinstance(s, str) else int(s) for s in inp.shape)

    def storage_dtype(self, inp: Input, reference: bool = False) -> torch.dtype:
        if inp.store == "D":
            return torch.float64 if reference else DTYPES[self.dtype]
        if inp.store == "F":
            return torch.float64 if reference else torch.float32
        return DTYPES[inp.store]

    def make_inputs(self, device: str | torch.device = "cpu") -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(self.seed * 7919 + 17)
        return [_make_input(self, i, g, device) for i in self.inputs]

    def reference_inputs(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """Float64 copies of the compute-dtype inputs; raw quantized inputs unchanged."""
        out = []
        for spec, t in zip(self.inputs, inputs):
            if spec.store in ("D", "F"):
                out.append(t.detach().to(torch.float64))
            else:
                out.append(t.detach())
        return out

    def repro(self) -> str:
        """A standalone script reproducing the case through fxfuse.rewrite."""
        return (
            "import torch, fxfuse\n"
            "import sys; sys.path.insert(0, 'tests/reliability')\n"
            "from chain_generator import Case\n"
            "from diff_harness import check_case\n"
            f"case = Case.from_json({self.to_json()!r})\n"
            "print(case.source())\n"
            "print(check_case(case))\n")


def _make_input(case: Case, spec: Input, g: torch.Generator, device) -> torch.Tensor:
    shape = case.shape_of(spec)
    dtype = case.storage_dtype(spec)
    # Storage shape for views: transposed views are made from [.., b, a] storage.
    if spec.layout == "t" and len(shape) >= 2:
        store_shape = shape[:-2] + (shape[-1], shape[-2])
    elif spec.layout == "slice" and len(shape) >= 1:
        store_shape = shape[:-1] + (shape[-1] * 2,)
    elif spec.layout == "offset":
        store_shape = (math.prod(shape) + 1,)
    else:
        store_shape = shape
    n = math.prod(store_shape)
    if spec.fill == "int":
        hi = max(1, int(spec.scale))
        base = torch.randint(-hi, hi + 1, store_shape, generator=g).to(torch.float64)
    elif spec.fill == "positive":
        base = (torch.rand(store_shape, generator=g, dtype=torch.float64) * 1.5 + 0.5) * spec.scale
    elif spec.fill == "zero_point":
        base = torch.randint(-3, 4, store_shape, generator=g).to(torch.float64)
    else:
        base = torch.randn(store_shape, generator=g, dtype=torch.float64) * spec.scale
    if spec.special and n > 0:
        idx = int(torch.randint(0, n, (1,), generator=g))
        base.view(-1)[idx] = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[spec.special]
    t = base.to(dtype) if dtype != torch.bool else base > 0
    if spec.layout == "t" and len(shape) >= 2:
        t = t.transpose(-1, -2)
    elif spec.layout == "slice" and len(shape) >= 1:
        t = t[..., ::2]
    elif spec.layout == "offset":
        t = t[1:].view(shape)
    assert tuple(t.shape) == shape, (spec, t.shape, shape)
    return t.to(device)


# ---------------------------------------------------------------------------------------------
# The op table: how each op renders as torch code.


@dataclass(frozen=True)
class OpDef:
    arity: int
    render: Callable[[list[str], dict], str]
    discontinuous: bool = False


# How users write SiLU and GELU: the composite op, torch's own decomposition spelled out (what
# pass/activation_canonicalization.cpp folds back when its intermediates are f32), and a near
# miss with one constant off (a different function the fold must leave alone). "{x}" is the
# operand.
# "upcast": the formula on x.to(FP32) (float32; float64 in the reference), rounded back to x's dtype once, as Inductor's decomposition of
# a 16-bit tensor reads (the 16-bit fold's pattern; "{u}" is the f32 value, bound once).
SPELLINGS: dict[str, dict[str, str]] = {
    "silu": {"composite": "F.silu({x})", "sigmoid": "{x} * torch.sigmoid({x})",
             "div": "{x} / (1 + torch.exp(-{x}))", "near": "{x} / (1.0625 + torch.exp(-{x}))",
             "upcast": "(({u} := {x}.to(FP32)) / (1 + torch.exp(-{u}))).to({x}.dtype)"},
    "gelu_tanh": {"composite": "F.gelu({x}, approximate='tanh')",
                  "torch": "0.5 * {x} * (1 + torch.tanh(0.7978845608028654 * ({x} + 0.044715 * ({x} * {x} * {x}))))",
                  "near": "0.5 * {x} * (1 + torch.tanh(0.7978845608028654 * ({x} + 0.04 * ({x} * {x} * {x}))))",
                  "upcast": "(0.5 * ({u} := {x}.to(FP32)) * (1 + torch.tanh(0.7978845608028654 * ({u} + 0.044715 * "
                            "({u} * {u} * {u}))))).to({x}.dtype)"},
    "gelu": {"composite": "F.gelu({x})", "torch": "{x} * 0.5 * (1 + torch.erf({x} * 0.7071067811865476))",
             "near": "{x} * 0.5 * (1 + torch.erf({x} * 0.7))",
             "upcast": "(({u} := {x}.to(FP32)) * 0.5 * (1 + torch.erf({u} * 0.7071067811865476))).to({x}.dtype)"},
}
SPELLING_WEIGHTS = {"composite": 5, "sigmoid": 2, "div": 2, "torch": 3, "near": 1, "upcast": 3}


def _spelled(op: str, x: str, params: dict) -> str:
    return SPELLINGS[op][params.get("form", "composite")].format(x=x, u=f"u_{x}")


def _p(params: dict, key: str, default: Any = None) -> Any:
    v = params.get(key, default)
    return repr(float(v)) if isinstance(v, float) else repr(v)


OPS: dict[str, OpDef] = {
    # ---- prologue ----
    "to_D": OpDef(1, lambda a, p: f"{a[0]}.to(D)"),
    "to_FP32": OpDef(1, lambda a, p: f"{a[0]}.to(FP32)"),
    "float": OpDef(1, lambda a, p: f"{a[0]}.to(FP32)"),
    "t": OpDef(1, lambda a, p: f"{a[0]}.t()"),
    "transpose": OpDef(1, lambda a, p: f"{a[0]}.transpose(-1, -2)"),
    "permute10": OpDef(1, lambda a, p: f"{a[0]}.permute(1, 0)"),
    "mul_scalar": OpDef(1, lambda a, p: f"{a[0]} * {_p(p, 'c')}"),
    "div_scalar": OpDef(1, lambda a, p: f"{a[0]} / {_p(p, 'c')}"),
    # ---- GEMMs ----
    "mm": OpDef(2, lambda a, p: f"torch.mm({a[0]}, {a[1]})"),
    "matmul": OpDef(2, lambda a, p: f"torch.matmul({a[0]}, {a[1]})"),  # what `a @ b` calls
    "bmm": OpDef(2, lambda a, p: f"torch.bmm({a[0]}, {a[1]})"),
    "addmm": OpDef(3, lambda a, p: f"torch.addmm({a[0]}, {a[1]}, {a[2]}, beta={_p(p, 'beta', 1.0)}, "
                                   f"alpha={_p(p, 'alpha', 1.0)})"),
    "linear": OpDef(2, lambda a, p: f"F.linear({a[0]}, {a[1]})"),
    "linear_bias": OpDef(3, lambda a, p: f"F.linear({a[0]}, {a[1]}, {a[2]})"),
    # ---- elementwise (epilogue, and mul/div/sub in prologues) ----
    "add": OpDef(2, lambda a, p: f"{a[0]} + {a[1]}"),
    "add_alpha": OpDef(2, lambda a, p: f"torch.add({a[0]}, {a[1]}, alpha={_p(p, 'alpha', 0.5)})"),
    "sub": OpDef(2, lambda a, p: f"{a[0]} - {a[1]}"),
    "sub_alpha": OpDef(2, lambda a, p: f"torch.sub({a[0]}, {a[1]}, alpha={_p(p, 'alpha', 2.0)})"),
    "rsub_scalar": OpDef(1, lambda a, p: f"{_p(p, 'c')} - {a[0]}"),
    "add_scalar": OpDef(1, lambda a, p: f"{a[0]} + {_p(p, 'c')}"),
    "mul": OpDef(2, lambda a, p: f"{a[0]} * {a[1]}"),
    "div": OpDef(2, lambda a, p: f"{a[0]} / {a[1]}"),
    "div_safe": OpDef(2, lambda a, p: f"{a[0]} / ({a[1]}.abs() + 1.0)"),
    "neg": OpDef(1, lambda a, p: f"-{a[0]}"),
    "reciprocal": OpDef(1, lambda a, p: f"torch.reciprocal({a[0]}.abs() + 1.0)"),
    "reciprocal_raw": OpDef(1, lambda a, p: f"torch.reciprocal({a[0]})"),
    "sqrt": OpDef(1, lambda a, p: f"torch.sqrt({a[0]}.abs() + {_p(p, 'eps', 1e-2)})"),
    "rsqrt": OpDef(1, lambda a, p: f"torch.rsqrt({a[0]}.abs() + {_p(p, 'eps', 1e-2)})"),
    "exp": OpDef(1, lambda a, p: f"torch.exp(torch.clamp({a[0]}, max={_p(p, 'hi', 4.0)}))"),
    "log": OpDef(1, lambda a, p: f"torch.log({a[0]}.abs() + {_p(p, 'eps', 1e-2)})"),
    "tanh": OpDef(1, lambda a, p: f"torch.tanh({a[0]})"),
    "erf": OpDef(1, lambda a, p: f"torch.erf({a[0]})"),
    "sigmoid": OpDef(1, lambda a, p: f"torch.sigmoid({a[0]})"),
    "sin": OpDef(1, lambda a, p: f"torch.sin({a[0]})"),
    "cos": OpDef(1, lambda a, p: f"torch.cos({a[0]})"),
    "relu": OpDef(1, lambda a, p: f"torch.relu({a[0]})"),
    "F_relu": OpDef(1, lambda a, p: f"F.relu({a[0]})"),
    "gelu": OpDef(1, lambda a, p: _spelled("gelu", a[0], p)),
    "gelu_tanh": OpDef(1, lambda a, p: _spelled("gelu_tanh", a[0], p)),
    "silu": OpDef(1, lambda a, p: _spelled("silu", a[0], p)),
    "leaky_relu": OpDef(1, lambda a, p: f"F.leaky_relu({a[0]}, {_p(p, 'slope', 0.01)})"),
    "hardtanh": OpDef(1, lambda a, p: f"F.hardtanh({a[0]}, {_p(p, 'lo', -1.0)}, {_p(p, 'hi', 1.0)})"),
    "hardswish": OpDef(1, lambda a, p: f"F.hardswish({a[0]})"),
    # the activations the pass lowers to their ATen kernel's formula (pass/composite_activations.cpp)
    "hardsigmoid": OpDef(1, lambda a, p: f"F.hardsigmoid({a[0]})"),
    "softplus": OpDef(1, lambda a, p: f"F.softplus({a[0]}, {_p(p, 'beta', 1.0)}, {_p(p, 'threshold', 20.0)})"),
    "mish": OpDef(1, lambda a, p: f"F.mish({a[0]})"),
    "elu": OpDef(1, lambda a, p: f"F.elu({a[0]}, {_p(p, 'alpha', 1.0)})"),
    "selu": OpDef(1, lambda a, p: f"F.selu({a[0]})"),
    "celu": OpDef(1, lambda a, p: f"F.celu({a[0]}, {_p(p, 'alpha', 1.0)})"),
    "logsigmoid": OpDef(1, lambda a, p: f"F.logsigmoid({a[0]})"),
    "log1p": OpDef(1, lambda a, p: f"torch.log1p({a[0]}.abs())"),
    "expm1": OpDef(1, lambda a, p: f"torch.expm1(torch.clamp({a[0]}, max={_p(p, 'hi', 4.0)}))"),
    "sign": OpDef(1, lambda a, p: f"torch.sign({a[0]})", discontinuous=True),
    "maximum": OpDef(2, lambda a, p: f"torch.maximum({a[0]}, {a[1]})"),
    "minimum": OpDef(2, lambda a, p: f"torch.minimum({a[0]}, {a[1]})"),
    "clamp": OpDef(1, lambda a, p: f"torch.clamp({a[0]}, {_p(p, 'lo')}, {_p(p, 'hi')})"),
    "clamp_min": OpDef(1, lambda a, p: f"torch.clamp({a[0]}, min={_p(p, 'lo')})"),
    "clamp_max": OpDef(1, lambda a, p: f"torch.clamp({a[0]}, max={_p(p, 'hi')})"),
    "where_pos": OpDef(2, lambda a, p: f"torch.where({a[0]} > {_p(p, 'c', 0.0)}, {a[0]}, {a[1]})",
                       discontinuous=True),
    "where_cmp": OpDef(3, lambda a, p: f"torch.where({a[0]} {p.get('cmp', '<')} {_p(p, 'c', 0.0)}, {a[1]}, {a[2]})",
                       discontinuous=True),
    "cmp_to_D": OpDef(1, lambda a, p: f"({a[0]} {p.get('cmp', '>')} {_p(p, 'c', 0.0)}).to({a[0]}.dtype)",
                      discontinuous=True),
    "cmp_mask_mul": OpDef(2, lambda a, p: f"{a[1]} * ({a[0]} {p.get('cmp', '>=')} {_p(p, 'c', 0.0)})",
                          discontinuous=True),
    "pow_int": OpDef(1, lambda a, p: f"torch.pow({a[0]}, {_p(p, 'e', 2)})"),
    "pow_frac": OpDef(1, lambda a, p: f"torch.pow({a[0]}.abs() + {_p(p, 'eps', 1e-2)}, {_p(p, 'e', 0.5)})"),
    "square_op": OpDef(1, lambda a, p: f"{a[0]} ** 2"),
    "abs": OpDef(1, lambda a, p: f"torch.abs({a[0]})"),
    "convert_roundtrip": OpDef(1, lambda a, p: f"{a[0]}.to(FP32).to(D)"),
    "convert_down": OpDef(1, lambda a, p: f"{a[0]}.to(D)"),
    "convert_up": OpDef(1, lambda a, p: f"{a[0]}.to(FP32)"),
}

# Epilogue ops the generator draws from, with weights (the operands come from the pool).
UNARY_EPILOGUE = [
    ("neg", 2), ("reciprocal", 2), ("reciprocal_raw", 0), ("sqrt", 2), ("rsqrt", 2), ("exp", 3), ("log", 2),
    ("tanh", 3), ("erf", 2), ("sigmoid", 3), ("sin", 2), ("cos", 2), ("relu", 4), ("F_relu", 1), ("gelu", 4),
    ("gelu_tanh", 4), ("silu", 4), ("leaky_relu", 2), ("hardtanh", 2), ("hardswish", 2), ("clamp", 2),
    ("clamp_min", 1), ("clamp_max", 1), ("pow_int", 2), ("pow_frac", 1), ("square_op", 1), ("abs", 2),
    ("convert_roundtrip", 2), ("add_scalar", 2), ("mul_scalar", 3), ("div_scalar", 1), ("rsub_scalar", 1),
    ("cmp_to_D", 1),
]
# Drawn after those where GenConfig.composite_activations (session 56's lowerings, pass/composite_activations.cpp)
COMPOSITE_EPILOGUE = [
    ("hardsigmoid", 1), ("softplus", 2), ("mish", 1), ("elu", 1), ("selu", 1), ("celu", 1), ("logsigmoid", 1),
    ("log1p", 1), ("expm1", 1), ("sign", 1),
]
BINARY_EPILOGUE = [
    ("add", 8), ("add_alpha", 1), ("sub", 3), ("sub_alpha", 1), ("mul", 5), ("div", 1), ("div_safe", 2),
    ("maximum", 2), ("minimum", 2), ("where_pos", 2), ("cmp_mask_mul", 1),
]


def _weighted(rng: random.Random, table: list[tuple[str, int]]) -> str:
    total = sum(w for _, w in table)
    x = rng.uniform(0, total)
    for name, w in table:
        x -= w
        if x <= 0:
            return name
    return table[-1][0]


# ---------------------------------------------------------------------------------------------
# The generator


@dataclass
class GenConfig:
    """Size and feature knobs. CI keeps shapes small; the GPU run may go larger."""
    max_m: int = 24
    max_n: int = 24
    max_k: int = 48
    large_k_prob: float = 0.02      # K in [512, 4096]
    # Shapes the Hopper (TMA + wgmma) kernel can take: M >= 128 (64-256 rows when their 64-row
    # tiles fill the GPU: codegen decodeBatchFillsSms), N and K multiples of 8 (since session 17
    # the heuristic refuses it under 64 tiles of 64x128, since session 18 under 32 at K <= 1024
    # for one matrix and where 128 < N < 384 with a partial column tile, so these reach it mostly under
    # FXFUSE_SM90_ALL_EPILOGUES=1, the differential's sm90-all half). Random
    # sizes almost never are (under 1 % of the GPU run's cases were), so the GPU run asks for them.
    hopper_shape_prob: float = 0.0
    # Cases the Hopper kernel can take as they are (under FXFUSE_SM90_ALL_EPILOGUES=1, as above):
    # bf16/f16 operands read as they are (no prologue,
    # contiguous; a NaN/Inf as often as in other operands), M in [128, 600], N in [128, 768]
    # and K multiples of 8 (whichever tile sm90::chooseConfig takes; whole and edge tiles),
    # mm / addmm / linear, at least one epilogue op. (Random chains otherwise reach the
    # Hopper kernel rarely: about 3 % of the sm90-all half of session 6's run.)
    hopper_plain_prob: float = 0.0
    # Of those, decode sizes with a long K (drawn only when > 0, so other seeds keep their cases):
    # one 48-64-row tile at K of 8192-14336 and N of 128-768, where session 14's heuristic ran the
    # split-K tile.
    hopper_decode_prob: float = 0.0
    # ... and with N of 4096-5120 (32-40 column tiles of 128; drawn only when True): since session
    # 17 split-K needs 32 tiles or more (codegen sm90::splitKForFewTiles), so the N above no
    # longer reaches it (few tiles, kept small: the CPU's float64 reference of a 14336 x 5120
    # weight is already 0.6 GB); False reproduces the chunks recorded before.
    hopper_decode_wide_n: bool = False
    # Of those, two 64-row tiles instead (96-128 rows; drawn only when > 0): split-K's two row
    # tiles (session 15; since session 16 the heuristic leaves these shapes to the unfused path,
    # so the GPU runs draw none; kept to reproduce session 16's recorded chunks 540-554).
    hopper_decode_two_tiles_prob: float = 0.0
    max_epilogue_ops: int = 7
    # Of the epilogue's extra operands, those stored as int32 (integers up to 200, exact in bf16 and f16, 0-d, [1],
    # a row or a column): the converts to the 16-bit common dtype of session 55 (pass/common_dtype.cpp) on every
    # kernel. Drawn only when > 0, so other runs keep their cases (FXFUSE_DIFF_FOREIGN_OPERANDS).
    foreign_operand_prob: float = 0.0
    # The activations with an ATen kernel of their own, and log1p / expm1 / sign, among the unary epilogue ops
    # (COMPOSITE_EPILOGUE; session 56). They change every case's draws: False keeps the runs recorded before
    # (FXFUSE_DIFF_ACTIVATIONS=0); the differential's runs draw them (activations_from_env).
    composite_activations: bool = False
    special_prob: float = 0.06      # a NaN/Inf somewhere in the inputs
    dtypes: tuple[str, ...] = COMPUTE_DTYPES
    dtype_weights: tuple[float, ...] = (0.4, 0.35, 0.25)
    gemms: tuple[str, ...] = ("mm", "addmm", "linear", "linear3d", "bmm", "matmul3d")
    gemm_weights: tuple[float, ...] = (0.25, 0.2, 0.25, 0.1, 0.1, 0.1)
    allow_noncontig_inputs: bool = True
    fp8: bool = True
    # SiLU / GELU spelled out as well (SPELLINGS; session 10). Runs recorded before session 10
    # (tests/reliability/*.jsonl name seeds) had only the composite ops: False reproduces them.
    spellings: bool = True


def gpu_config(hopper_shape_prob: float, hopper_plain_prob: float, hopper_decode_prob: float = 0.0,
               hopper_decode_two_tiles_prob: float = 0.0, hopper_decode_wide_n: bool = False) -> GenConfig:
    """The GPU differential's generator sizes (test_differential.py's GPU chunks; the CPU tools
    that estimate or compile what it reaches use the same)."""
    return GenConfig(max_m=300, max_n=300, max_k=600, large_k_prob=0.05, hopper_shape_prob=hopper_shape_prob,
                     hopper_plain_prob=hopper_plain_prob, hopper_decode_prob=hopper_decode_prob,
                     hopper_decode_two_tiles_prob=hopper_decode_two_tiles_prob,
                     hopper_decode_wide_n=hopper_decode_wide_n, spellings=spellings_from_env(),
                     foreign_operand_prob=foreign_operands_from_env(), composite_activations=activations_from_env())


def spellings_from_env() -> bool:
    """FXFUSE_DIFF_SPELLINGS=0 reproduces the runs recorded before session 10 (GenConfig.spellings)."""
    return os.environ.get("FXFUSE_DIFF_SPELLINGS", "1") != "0"


def foreign_operands_from_env() -> float:
    """FXFUSE_DIFF_FOREIGN_OPERANDS=P draws int32 extra operands with probability P (GenConfig.foreign_operand_prob;
    0, the default, keeps the runs recorded before session 55)."""
    return float(os.environ.get("FXFUSE_DIFF_FOREIGN_OPERANDS", "0"))


def activations_from_env() -> bool:
    """FXFUSE_DIFF_ACTIVATIONS=0 reproduces the runs recorded before session 56 (GenConfig.composite_activations)."""
    return os.environ.get("FXFUSE_DIFF_ACTIVATIONS", "1") != "0"


class _Builder:
    def __init__(self, rng: random.Random, case: Case):
        self.rng = rng
        self.case = case
        self.counter = 0

    def input(self, shape, **kw) -> str:
        name = f"x{len(self.case.inputs)}"
        self.case.inputs.append(Input(name=name, shape=list(shape), **kw))
        return name

    def node(self, op: str, args: list[str], stage: str = "epilogue", **params) -> str:
        name = f"v{self.counter}"
        self.counter += 1
        self.case.nodes.append(Node(name=name, op=op, args=list(args), params=params, stage=stage))
        return name


def _dim(rng: random.Random, hi: int, odd_bias: bool = True) -> int:
    r = rng.random()
    if r < 0.12:
        return 1
    if r < 0.2:
        return rng.choice([8, 16, 32]) if hi >= 8 else hi
    return rng.randint(2, hi)


def _operand(b: _Builder, which: str, shape: list, kdim_last: bool, cfg: GenConfig, plain: bool = False) -> str:
    """A GEMM operand with a random prologue (none when ``plain``: a contiguous input of the
    compute dtype). ``shape``: the logical shape the GEMM wants. Returns the name of the value
    fed to the GEMM (in the compute dtype)."""
    rng, case = b.rng, b.case
    if plain:
        scale = 1.0 / math.sqrt(max(1, case.K)) if which == "b" else 1.0
        special = rng.choice(["nan", "inf", "-inf"]) if rng.random() < cfg.special_prob / 3 else None
        return b.input(shape, scale=scale, special=special)
    stage = f"prologue_{which}"
    dt = case.dtype
    # Raw storage: the compute dtype, or a quantized/other float type converted in the graph.
    r = rng.random()
    raw_store, fill, scale = "D", "normal", 1.0
    if r < 0.18:
        raw_store, fill, scale = "i8", "int", 8.0
    elif r < 0.24 and cfg.fp8 and "f8e4m3" in DTYPES:
        raw_store, fill, scale = rng.choice(["f8e4m3", "f8e5m2"]), "normal", 2.0
    elif r < 0.32:
        raw_store = rng.choice([d for d in ("f16", "bf16", "f32") if d != dt])
    # B-side data scaled so the GEMM output is O(1).
    if which == "b" and raw_store == "D":
        scale = 1.0 / math.sqrt(max(1, case.K))
    # Layout: graph transpose (a permute node), an input that is a non-contiguous view, or plain.
    lr = rng.random()
    graph_t = len(shape) >= 2 and lr < 0.25
    view_layout = "contig"
    if cfg.allow_noncontig_inputs and not graph_t and len(shape) >= 2 and lr < 0.35:
        view_layout = rng.choice(["t", "slice"])
    special = None
    if rng.random() < cfg.special_prob / 3:
        special = rng.choice(["nan", "inf", "-inf"])
    if graph_t:
        stored = list(shape[:-2]) + [shape[-1], shape[-2]]
        name = b.input(stored, store=raw_store, fill=fill, scale=scale, special=special)
        v = b.node("t" if len(shape) == 2 else "transpose", [name], stage)
    else:
        v = b.input(shape, store=raw_store, fill=fill, scale=scale, layout=view_layout, special=special)
    if raw_store != "D":
        v = b.node("to_D", [v], stage)
    # Dequantization / scaling.
    rows, cols = shape[-2], shape[-1]
    if raw_store in ("i8",) or rng.random() < 0.3:
        kind = rng.choice(["tensor0d", "scalar", "row", "col", "zp_row", "zp_tensor"])
        qscale = (1.0 / (4.0 * math.sqrt(max(1, case.K)))) if (which == "b" and raw_store == "i8") else 1.0
        if raw_store.startswith("f8") and which == "b":
            qscale = 1.0 / (2.0 * math.sqrt(max(1, case.K)))
        if kind.startswith("zp"):
            zp = b.input([] if kind == "zp_tensor" else [rows, 1], fill="zero_point")
            v = b.node("sub", [v, zp], stage)
            kind = "tensor0d"
        c = round(qscale * rng.uniform(0.5, 2.0), 6)
        if kind == "scalar":
            if rng.random() < 0.7:
                v = b.node("mul_scalar", [v], stage, c=c)
            else:
                v = b.node("div_scalar", [v], stage, c=round(1.0 / c, 6))
        else:
            sshape = {"tensor0d": [], "row": [rows, 1], "col": [cols]}[kind]
            if rng.random() < 0.75:
                s = b.input(sshape, fill="positive", scale=qscale)
                v = b.node("mul", [v, s], stage)
            else:
                s = b.input(sshape, fill="positive", scale=1.0 / qscale)
                v = b.node("div", [v, s], stage)
    return v


def generate(seed: int, cfg: GenConfig | None = None) -> Case:
    cfg = cfg or GenConfig()
    rng = random.Random(seed)
    spelling = random.Random(seed ^ 0x5EE11)  # SiLU / GELU spellings (SPELLINGS)
    dtype = rng.choices(cfg.dtypes, weights=cfg.dtype_weights[:len(cfg.dtypes)])[0]
    gemm = rng.choices(cfg.gemms, weights=cfg.gemm_weights[:len(cfg.gemms)])[0]
    M, N = _dim(rng, cfg.max_m), _dim(rng, cfg.max_n)
    K = _dim(rng, cfg.max_k)
    if rng.random() < cfg.large_k_prob:
        K = rng.choice([512, 1000, 1024, 2047, 4096])
    # drawn only when asked for, so that the cases of existing seeds stay what they were
    if cfg.hopper_shape_prob > 0 and rng.random() < cfg.hopper_shape_prob:
        M = rng.randint(128, max(128, 2 * cfg.max_m))
        N, K = 8 * max(1, N // 8), 8 * max(2, K // 8)
    plain = cfg.hopper_plain_prob > 0 and rng.random() < cfg.hopper_plain_prob
    if plain:
        dtype = rng.choice(["bf16", "f16"])
        gemm = rng.choice(["mm", "addmm", "linear", "linear"])
        M, N, K = rng.randint(128, 600), 8 * rng.randint(16, 96), 8 * rng.randint(8, 96)
        if cfg.hopper_decode_prob > 0 and rng.random() < cfg.hopper_decode_prob:
            M, K = rng.randint(48, 64), rng.choice([8192, 8200, 10240, 14336])
            if cfg.hopper_decode_two_tiles_prob > 0 and rng.random() < cfg.hopper_decode_two_tiles_prob:
                M = rng.randint(96, 128)
            if cfg.hopper_decode_wide_n:
                N = 8 * rng.randint(512, 640)
    dims = {"M": M, "N": N, "K": K, "B": rng.randint(1, 3), "S": rng.randint(1, 5)}
    case = Case(seed=seed, dtype=dtype, gemm=gemm, dims=dims, inputs=[], nodes=[], outputs=[])
    b = _Builder(rng, case)

    # ---- the GEMM and its operands ----
    if gemm == "mm":
        a = _operand(b, "a", ["M", "K"], True, cfg, plain)
        w = _operand(b, "b", ["K", "N"], False, cfg, plain)
        y = b.node(rng.choice(["mm", "matmul"]), [a, w], "gemm")
        out_lead = ["M"]
    elif gemm == "addmm":
        a = _operand(b, "a", ["M", "K"], True, cfg, plain)
        w = _operand(b, "b", ["K", "N"], False, cfg, plain)
        bshape = rng.choice([["N"], ["M", "N"], ["1", "N"], ["M", "1"], []])
        bshape = [int(s) if s == "1" else s for s in bshape]
        bias = b.input(bshape, special=rng.choice(["nan", "inf"]) if rng.random() < cfg.special_prob / 2 else None)
        alpha = rng.choice([1.0, 1.0, 0.5, -1.25, 2.0])
        beta = rng.choice([1.0, 1.0, 0.5, -1.0, 0.0])
        y = b.node("addmm", [bias, a, w], "gemm", alpha=alpha, beta=beta)
        out_lead = ["M"]
    elif gemm in ("linear", "linear3d"):
        xshape = ["M", "K"] if gemm == "linear" else ["B", "M", "K"]
        a = _operand(b, "a", xshape, True, cfg, plain)
        w = _operand(b, "b", ["N", "K"], True, cfg, plain)
        if rng.random() < 0.6:
            bias = b.input(["N"])
            y = b.node("linear_bias", [a, w, bias], "gemm")
        else:
            y = b.node("linear", [a, w], "gemm")
        out_lead = ["M"] if gemm == "linear" else ["B", "M"]
    elif gemm == "bmm":
        a = _operand(b, "a", ["B", "M", "K"], True, cfg)
        w = _operand(b, "b", ["B", "K", "N"], False, cfg)
        y = b.node("bmm", [a, w], "gemm")
        out_lead = ["B", "M"]
    else:  # matmul3d: [B,M,K] @ [K,N]
        a = _operand(b, "a", ["B", "M", "K"], True, cfg)
        w = _operand(b, "b", ["K", "N"], False, cfg)
        y = b.node("matmul", [a, w], "gemm")
        out_lead = ["B", "M"]

    # ---- the epilogue ----
    pool = [y]
    used: set[str] = set()
    n_ops = rng.choice([0] + list(range(1, cfg.max_epilogue_ops + 1)) + [1, 2, 2, 3])
    if rng.random() < 0.08:
        n_ops = 0
    if plain:  # a bare GEMM is not fused: the case would test nothing
        n_ops = max(n_ops, 1)
    upcast_done = False

    def extra_operand(foreign_ok: bool = True) -> str:
        # (not for cmp_mask_mul: a bool mask times an int32 operand is an int32 value)
        if foreign_ok and cfg.foreign_operand_prob > 0 and rng.random() < cfg.foreign_operand_prob:
            shape = rng.choice([[], [1], ["N"], out_lead + [1]])
            return b.input(shape, store="i32", fill="int", scale=200.0)
        r = rng.random()
        special = rng.choice(["nan", "inf", "-inf"]) if rng.random() < cfg.special_prob else None
        store = "D"
        if rng.random() < 0.1 and dtype != "f32":
            store = "F"   # a dimensioned fp32 extra input promotes the rest of the chain
        if r < 0.2:
            return b.input([], special=special, store=rng.choice(["D", "F"]))      # 0-d tensor
        if r < 0.45:
            return b.input(["N"], special=special, store=store)                   # row vector
        if r < 0.65:
            return b.input(out_lead + [1], special=special, store=store)          # column vector
        if r < 0.72 and len(out_lead) == 2:
            return b.input([out_lead[0], 1, "N"], special=special, store=store)   # per-batch row
        layout = rng.choice(["contig", "contig", "contig", "t", "offset"]) if cfg.allow_noncontig_inputs else "contig"
        return b.input(out_lead + ["N"], special=special, store=store, layout=layout)  # residual

    for _ in range(n_ops):
        recent = pool[-1] if rng.random() < 0.7 else rng.choice(pool)
        if rng.random() < 0.55:
            op = _weighted(rng, UNARY_EPILOGUE + (COMPOSITE_EPILOGUE if cfg.composite_activations else []))
            params = _unary_params(rng, op)
            if cfg.spellings and op in SPELLINGS:  # its own stream: the cases' other draws stay as they were
                forms = [(f, SPELLING_WEIGHTS[f]) for f in SPELLINGS[op]]
                form = _weighted(spelling, forms)
                if form != "composite":
                    params["form"] = form
            v = b.node(op, [recent], **params)
        else:
            op = _weighted(rng, BINARY_EPILOGUE)
            if rng.random() < 0.35 and len(pool) > 1:
                other = rng.choice([p for p in pool if p != recent] or pool)
            else:
                other = extra_operand(foreign_ok=op != "cmp_mask_mul")
            args = [recent, other] if rng.random() < 0.8 else [other, recent]
            if op in ("mul", "div", "div_safe", "cmp_mask_mul") and other.startswith("x"):
                # inf times a value that underflows to 0 in one evaluation and not the other
                # is NaN vs inf: legit rounding, not a bug. Specials go to additive operands.
                next(i for i in case.inputs if i.name == other).special = None
            if op in ("div",) and args[1] != recent and not args[1].startswith("v"):
                # divide by an input drawn positive: well conditioned
                inp = next(i for i in case.inputs if i.name == args[1])
                inp.fill = "positive"
                inp.special = None
            elif op == "div":
                op = "div_safe"
            params = {}
            if op in ("add_alpha", "sub_alpha"):
                params["alpha"] = rng.choice([0.5, 2.0, -1.5])
            if op in ("where_pos", "cmp_mask_mul"):
                params["c"] = 0.0
                if op == "cmp_mask_mul":
                    params["cmp"] = rng.choice([">", ">=", "<", "<="])
            v = b.node(op, args, **params)
        for a in case.nodes[-1].args:
            used.add(a)
        pool.append(v)
        if not upcast_done and dtype != "f32" and rng.random() < 0.08:
            pool.append(b.node("convert_up", [v]))
            used.add(v)
            upcast_done = True

    # ---- outputs: every sink, plus (sometimes) a value that is also used later ----
    sinks = [v for v in pool if v not in used]
    outputs = sinks[-1:] + [s for s in sinks[:-1]]
    if rng.random() < 0.25 and len(pool) > 1:
        extra = rng.choice(pool[:-1])
        if extra not in outputs:
            outputs.append(extra)
    while len(outputs) > 4:  # the kernel ABI has 4 outputs; fold the rest in
        a_, b_ = outputs.pop(), outputs.pop()
        outputs.append(b.node("add", [b_, a_]))
    if upcast_done and rng.random() < 0.5:
        outputs[0] = b.node("convert_down", [outputs[0]])
    case.outputs = outputs
    case.notes = f"{gemm} {dtype} M={M} N={N} K={K}"
    return case


def _unary_params(rng: random.Random, op: str) -> dict:
    if op == "leaky_relu":
        return {"slope": rng.choice([0.01, 0.2, -0.5, 1.5])}
    if op == "hardtanh":
        lo = rng.choice([-1.0, -2.0, -0.5, 0.0])
        return {"lo": lo, "hi": lo + rng.choice([0.5, 1.0, 3.0])}
    if op == "clamp":
        lo = rng.choice([-1.0, -3.0, 0.0, -0.25])
        return {"lo": lo, "hi": lo + rng.choice([0.5, 2.0, 6.0])}
    if op == "clamp_min":
        return {"lo": rng.choice([0.0, -1.0, 0.5])}
    if op == "clamp_max":
        return {"hi": rng.choice([0.0, 1.0, 6.0])}
    if op == "pow_int":
        return {"e": rng.choice([2, 3, 2.0, 1.0, 0.0, -1.0][:4])}
    if op == "pow_frac":
        return {"e": rng.choice([0.5, 1.5, 0.25, -0.5]), "eps": 0.05}
    if op in ("sqrt", "rsqrt", "log"):
        return {"eps": rng.choice([1e-2, 0.1, 1.0])}
    if op == "exp":
        return {"hi": rng.choice([2.0, 4.0, 8.0])}
    if op == "mul_scalar":
        return {"c": rng.choice([0.5, 2.0, -1.0, 0.125, 1.7])}
    if op == "div_scalar":
        return {"c": rng.choice([2.0, 3.0, 0.5, -4.0])}
    if op in ("add_scalar", "rsub_scalar"):
        return {"c": rng.choice([1.0, -0.5, 3.0])}
    if op == "softplus":
        return {"beta": rng.choice([1.0, 2.0, 0.5]), "threshold": rng.choice([20.0, 10.0, 2.0])}
    if op in ("elu", "celu"):
        return {"alpha": rng.choice([1.0, 0.5, 1.7])}
    if op == "expm1":
        return {"hi": rng.choice([2.0, 4.0, 8.0])}
    if op == "cmp_to_D":
        return {"cmp": rng.choice([">", "<", ">=", "<="]), "c": 0.0}
    return {}
