"""A pure-Python stand-in for ``fxfuse._C``, used by the tests only while the real extension
is not built (or when FXFUSE_TEST_STANDIN=1). It reads the IR text, fuses
``mm/addmm/linear`` with a region of elementwise ops on scalars and ``[N]`` vectors, emits a
``fxfuse.chain v1`` spec, and registers ``fxfuse::gemm_chain`` with a CPU reference kernel
that evaluates the spec. It knows much less than the C++ pass; tests that need more are
marked ``needs_real_pass``.
"""
from __future__ import annotations

import glob
import json
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(__file__))
import _ir_parse as irp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.normpath(os.path.join(HERE, "..", "..", "python", "fxfuse"))

_TORCH_DT = {"bool": torch.bool, "i8": torch.int8, "u8": torch.uint8, "i32": torch.int32,
             "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16,
             "f32": torch.float32, "f64": torch.float64}

# aten target -> (spec op, arity counted on tensor/scalar operands)
_UNARY = {"aten.relu.default": "relu", "aten.tanh.default": "tanh", "aten.sigmoid.default": "sigmoid",
          "aten.silu.default": "silu", "aten.erf.default": "erf", "aten.exp.default": "exp",
          "aten.neg.default": "neg", "aten.abs.default": "abs"}
_BINARY = {"aten.add.Tensor": "add", "aten.sub.Tensor": "sub", "aten.mul.Tensor": "mul",
           "aten.div.Tensor": "div", "aten.maximum.default": "maximum", "aten.minimum.default": "minimum"}
_GEMMS = {"aten.mm.default", "aten.addmm.default", "aten.linear.default"}

_FN = {"neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "tanh": torch.tanh, "erf": torch.erf,
       "sigmoid": torch.sigmoid, "relu": torch.relu, "silu": torch.nn.functional.silu,
       "gelu": torch.nn.functional.gelu,
       "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
       "convert": lambda x: x,
       "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
       "maximum": torch.maximum, "minimum": torch.minimum, "reciprocal": torch.reciprocal,
       "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "log": torch.log, "sin": torch.sin, "cos": torch.cos,
       "hardswish": torch.nn.functional.hardswish, "pow": torch.pow, "lt": torch.lt, "le": torch.le,
       "gt": torch.gt, "ge": torch.ge, "eq": torch.eq, "ne": torch.ne,
       "leaky_relu": lambda x, a: torch.where(x > 0, x, x * a),
       "where": lambda c, a, b: torch.where(c.bool(), a, b),
       "clamp": lambda x, lo, hi: torch.clamp(x, None if lo.isnan() else lo, None if hi.isnan() else hi),
       "hardtanh": lambda x, lo, hi: torch.clamp(x, lo, hi)}

_stats = {"kernels_compiled": 0, "cache_hits": 0}


def real_extension_built() -> bool:
    return bool(glob.glob(os.path.join(PKG, "_C*.so")))


# ---------------------------------------------------------------- the stand-in pass
def _gelu_kind(node):
    return "gelu_tanh" if node.kwargs.get("approximate") == "tanh" else "gelu"


def _plan(ir_text: str, options: dict) -> dict:
    nodes, outputs = irp.parse(ir_text)
    by = {n.name: n for n in nodes}
    users: dict[str, list[str]] = {n.name: [] for n in nodes}
    for n in nodes:
        for a in _flat(n.args) + _flat(list(n.kwargs.values())):
            if isinstance(a, irp.Ref):
                users[a.name].append(n.name)
    for a in _flat(outputs):
        if isinstance(a, irp.Ref):
            users[a.name].append("<output>")
    order = {n.name: i for i, n in enumerate(nodes)}
    rewrites, report = [], []
    counters = {"gemms_seen": 0, "chains_fused": 0}
    taken: set[str] = set()

    def reject(g, reason, detail=""):
        report.append({"gemm": g.name, "status": "not_fused", "reason": reason, "detail": detail})
        counters["reject." + reason] = counters.get("reject." + reason, 0) + 1

    for g in nodes:
        if g.op not in _GEMMS:
            continue
        counters["gemms_seen"] += 1
        t = g.type
        if not isinstance(t, irp.TensorType) or t.dtype != "f32" or len(t.dims) != 2 and g.op != "aten.linear.default":
            reject(g, "unknown_meta" if not isinstance(t, irp.TensorType) else "unsupported_dtype"); continue
        if g.name in taken:
            continue
        b = g.kwargs.get("bias") if g.op == "aten.linear.default" else None
        if g.op == "aten.mm.default":
            a, w, b = g.args[0], g.args[1], None
        elif g.op == "aten.addmm.default":
            b, a, w = g.args[0], g.args[1], g.args[2]
        else:
            a, w = g.args[0], g.args[1]
            b = g.args[2] if len(g.args) > 2 else b
        replaced = [g.name]
        inputs: list[tuple[str, str]] = []   # (node name, dims)
        lines: list[str] = []
        vid: dict[str, int] = {}

        def new(line):
            lines.append(f"%{len(lines)} = {line}")
            return len(lines) - 1

        def inp(name, dims, dtype):
            key = (name, dims)
            if key not in inputs:
                inputs.append(key)
            return new(f"input {inputs.index(key)} {dtype} [{','.join(dims)}]")

        an = by[a.name]
        a_rank = len(an.type.dims) if isinstance(an.type, irp.TensorType) else 0
        if a_rank < 2:
            reject(g, "unknown_meta"); continue
        va = inp(a.name, "m" * (a_rank - 1) + "k", an.type.dtype)
        wn = by[w.name]
        if g.op == "aten.linear.default":
            vb = inp(w.name, "nk", wn.type.dtype)
        elif wn.op in ("aten.permute.default", "aten.t.default") and users[w.name] == [g.name] and \
                (wn.op == "aten.t.default" or wn.args[1] == [1, 0]):
            replaced.append(wn.name)
            vb = inp(wn.args[0].name, "nk", wn.type.dtype)
        else:
            vb = inp(w.name, "kn", wn.type.dtype)
        vg = new(f"mm %{va} %{vb} : f32")
        if b is not None:
            vbias = inp(b.name, "n", by[b.name].type.dtype)
            vg = new(f"add %{vg} %{vbias} : f32")
        vid[g.name] = vg
        region = {g.name}
        n_out = t.dims[-1]
        grew = True
        while grew:
            grew = False
            for cand in sorted({u for r in region for u in users[r] if u != "<output>"}, key=order.get):
                c = by[cand]
                if cand in region or cand in taken:
                    continue
                op = _UNARY.get(c.op) or _BINARY.get(c.op) or ("gelu" if c.op == "aten.gelu.default" else None)
                if op is None or not isinstance(c.type, irp.TensorType) or c.type.dims != t.dims:
                    continue
                if c.op == "aten.gelu.default":
                    op = _gelu_kind(c)
                operands, ok = [], True
                for x in c.args[:2] if op in _BINARY.values() else c.args[:1]:
                    if isinstance(x, irp.Ref) and x.name in region:
                        operands.append(f"%{vid[x.name]}")
                    elif isinstance(x, irp.Ref):
                        xt = by[x.name].type
                        if by[x.name].op == "placeholder" and isinstance(xt, irp.TensorType) and xt.dims == [n_out]:
                            operands.append(f"%{inp(x.name, 'n', xt.dtype)}")
                        else:
                            ok = False
                    elif isinstance(x, (int, float)) and not isinstance(x, bool):
                        operands.append(f"%{new(f'const {float(x)!r} : f32')}")
                    else:
                        ok = False
                if not ok or (c.kwargs and c.op != "aten.gelu.default"):
                    continue
                vid[cand] = new(f"{op} {' '.join(operands)} : {c.type.dtype}")
                region.add(cand)
                replaced.append(cand)
                grew = True
        outs = [r for r in sorted(region, key=order.get) if any(u not in region for u in users[r])]
        if len(region) == 1:
            reject(g, "no_epilogue_no_prologue", "bare GEMM")
            continue
        if len(outs) > 4 or len(inputs) > 16:
            reject(g, "too_many_inputs"); continue
        taken.update(replaced)
        spec = "\n".join(["fxfuse.chain v1", "gemm mm"] + lines + [f"output %{vid[o]}" for o in outs]) + "\n"
        rid = len(rewrites)
        rewrites.append({"id": rid, "replaced": replaced, "inputs": [i for i, _ in inputs],
                         "outputs": outs, "spec": spec})
        report.append({"gemm": g.name, "status": "fused", "rewrite": rid,
                       "chain": " → ".join([g.op.split(".")[1]] + [by[r].op.split(".")[1] for r in replaced[1:]
                                                                    if r in region and r != g.name])})
        counters["chains_fused"] += 1
    return {"rewrites": rewrites, "report": report, "counters": counters}


def _flat(xs):
    out = []
    for x in xs:
        if isinstance(x, list):
            out += _flat(x)
        else:
            out.append(x)
    return out


# ---------------------------------------------------------------- the op
def _parse_spec(spec: str):
    lines = spec.strip().splitlines()
    assert lines[0] == "fxfuse.chain v1", lines[0]
    vals, outs = [], []
    for ln in lines[2:]:
        tok = ln.split()
        if tok[0] == "output":
            outs.append(int(tok[1][1:]))
            continue
        rhs = tok[2:]
        dtype = rhs[-1] if ":" in rhs else None
        body = rhs[:-2] if ":" in rhs else rhs
        vals.append((body, dtype))
    return vals, outs


def _to_space(t: torch.Tensor, dims: str, order: str) -> torch.Tensor:
    """Views input ``t`` (dims letters per tensor dim) as [order[0], order[1]] (m's flattened)."""
    letters = [d for d in dims]
    keep = [i for i, d in enumerate(letters) if d != "1"]
    t = t.reshape([t.shape[i] for i in keep]) if len(keep) != len(letters) else t
    letters = [letters[i] for i in keep]
    perm = [i for o in order for i, d in enumerate(letters) if d == o]
    t = t.permute(perm) if perm else t
    shape = []
    for o in order:
        n = [t.shape[perm.index(i)] for i, d in enumerate(letters) if d == o]
        size = 1
        for s in n:
            size *= s
        shape.append(size)
    return t.reshape(shape)


def _evaluate(inputs: list[torch.Tensor], spec: str) -> list[torch.Tensor]:
    vals, outs = _parse_spec(spec)
    env: list[torch.Tensor] = []
    lead = None
    for body, dtype in vals:
        kind = body[0]
        if kind == "input":
            slot, dt, dims = int(body[1]), body[2], body[3].strip("[]").replace(",", "")
            t = inputs[slot]
            if "k" in dims and "n" not in dims and "m" in dims:
                lead = [t.shape[i] for i, d in enumerate(dims) if d == "m"]
            space = "kn" if ("k" in dims and "n" in dims) else "mk" if "k" in dims else "mn"
            env.append(_to_space(t, dims, space))
        elif kind == "const":
            env.append(torch.tensor(float(body[1])))
        elif kind == "mm":
            a, b = env[int(body[1][1:])], env[int(body[2][1:])]
            env.append((a.float() @ b.float()).to(_TORCH_DT[dtype]))
        else:
            args = [env[int(x[1:])].float() for x in body[1:]]
            env.append(_FN[kind](*args).to(_TORCH_DT[dtype]))
    n = env[outs[0]].shape[-1]
    return [env[o].expand(-1, n).reshape(lead + [n]).contiguous() for o in outs]


def _out_meta(inputs, spec):
    vals, outs = _parse_spec(spec)
    lead, n = None, None
    for body, _ in vals:
        if body[0] == "input":
            t, dims = inputs[int(body[1])], body[3].strip("[]").replace(",", "")
            if "m" in dims and lead is None:
                lead = [t.shape[i] for i, d in enumerate(dims) if d == "m"]
            if "n" in dims and n is None:
                n = t.shape[dims.index("n")]
    return [inputs[0].new_empty(lead + [n], dtype=_TORCH_DT[vals[o][1]]) for o in outs]


_lib = None


def _register_op():
    global _lib
    if hasattr(torch.ops, "fxfuse") and hasattr(torch.ops.fxfuse, "gemm_chain"):
        return
    _lib = torch.library.Library("fxfuse", "DEF")
    _lib.define("gemm_chain(Tensor[] inputs, str spec) -> Tensor[]")

    def cpu(inputs, spec):
        _stats["kernels_compiled"] += 1
        return _evaluate(list(inputs), spec)

    _lib.impl("gemm_chain", cpu, "CPU")
    torch.library.register_fake("fxfuse::gemm_chain", lib=_lib)(lambda inputs, spec: _out_meta(inputs, spec))


def _opt_tool() -> str | None:
    for build in ("build-py", "build"):
        path = os.path.join(HERE, "..", "..", build, "tools", "fxfuse-opt")
        if os.path.exists(path):
            return os.path.normpath(path)
    return None


def _run_pass_with_opt(ir: str, opts: str = "{}") -> str:
    """The real C++ pass through the fxfuse-opt tool (FXFUSE_TEST_PASS=opt): the plan is
    the C++ pass's; only the op's CPU kernel is the Python evaluator above."""
    import subprocess

    res = subprocess.run([_opt_tool(), "-", "--report-json", "--no-ir", "--options", opts or "{}"],
                         input=ir, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise RuntimeError(f"fxfuse-opt failed ({res.returncode}): {res.stderr}")
    return res.stdout


def make_module() -> types.ModuleType:
    m = types.ModuleType("fxfuse._C")
    m.__file__ = __file__
    m.STANDIN = True
    if os.environ.get("FXFUSE_TEST_PASS") == "opt" and _opt_tool():
        m.run_pass = _run_pass_with_opt
        m.PASS = "fxfuse-opt"
    else:
        m.run_pass = lambda ir, opts="{}": json.dumps(_plan(ir, json.loads(opts or "{}")))
        m.PASS = "python"
    m.stats = lambda: dict(_stats)
    m.reset_stats = lambda: _stats.update({k: 0 for k in _stats})
    m.library_version = lambda: "standin-0"
    m.is_gemm_op = lambda target: target in _GEMMS
    m.nvrtc_available = lambda: False
    m.cuda_driver_available = lambda: False

    def generate_cuda(spec, M, N, K, arch="sm_90", B=1):
        return ("fx_standin_kernel", "// stand-in: no CUDA generated\n// " + spec.replace("\n", "\n// "))

    m.generate_cuda = generate_cuda
    return m


def _load_real() -> str | None:
    """Imports the built extension as ``fxfuse._C``; returns why it failed, or None."""
    import importlib.util

    for path in sorted(glob.glob(os.path.join(PKG, "_C*.so"))):
        spec = importlib.util.spec_from_file_location("fxfuse._C", path)
        try:
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except ImportError as e:
            return f"{os.path.basename(path)}: {e}"
        sys.modules["fxfuse._C"] = mod
        return None
    return "not built"


REAL_LOAD_ERROR: str | None = None


def install(force: bool = False) -> bool:
    """Installs the stand-in as ``fxfuse._C`` unless the real extension is built and loads
    (FXFUSE_TEST_STANDIN=1 or ``force``: always the stand-in). True when the stand-in is in use."""
    global REAL_LOAD_ERROR
    if "fxfuse._C" in sys.modules:
        return bool(getattr(sys.modules["fxfuse._C"], "STANDIN", False))
    if not force and os.environ.get("FXFUSE_TEST_STANDIN") != "1":
        REAL_LOAD_ERROR = _load_real()
        if REAL_LOAD_ERROR is None:
            return False
    _register_op()
    sys.modules["fxfuse._C"] = make_module()
    return True
