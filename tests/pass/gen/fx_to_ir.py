"""Test-case generator: prints the post-grad (or exported) FX graph of a small model in the
fxfuse IR text form (docs/ir.md), so tests/pass/*.ir mirror what PyTorch really produces.
Not the production exporter (that is python/fxfuse/ir_export.py); just enough for tests.

  python3 tests/pass/gen/fx_to_ir.py            # prints every case below
"""
import operator
import torch
import torch.nn.functional as F

DT = {torch.bool: "bool", torch.int8: "i8", torch.uint8: "u8", torch.int32: "i32",
      torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
      torch.float64: "f64", torch.float8_e4m3fn: "f8e4m3", torch.float8_e5m2: "f8e5m2"}


def dim(d):
    s = str(d)
    return s if s.isidentifier() or s.lstrip("-").isdigit() else f"({s})"


def ttype(v):
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(ttype(x) for x in v) + ")"
    if isinstance(v, torch.Tensor):
        dev = "cuda:0" if v.device.type == "cpu" else str(v.device)
        return (f"{DT[v.dtype]}[{','.join(dim(d) for d in v.shape)}]"
                f"{{{','.join(dim(s) for s in v.stride())}}}@{dev}")
    if isinstance(v, (torch.SymInt, int)):
        return "sym"
    return "?"


def arg(a):
    if isinstance(a, torch.fx.Node):
        return "%" + a.name
    if isinstance(a, bool):
        return "true" if a else "false"
    if isinstance(a, int):
        return str(a)
    if isinstance(a, float):
        r = "%.17g" % a
        return r if any(c in r for c in ".enai") else r + ".0"
    if isinstance(a, str):
        return '"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(a, torch.dtype):
        return DT[a]
    if isinstance(a, torch.device):
        return f"device({'cuda:0' if a.type == 'cpu' else a})"
    if isinstance(a, torch.layout):
        return f"enum({str(a).split('.')[-1]})"
    if isinstance(a, torch.memory_format):
        return f"enum({str(a).split('.')[-1]})"
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(arg(x) for x in a) + "]"
    if a is None:
        return "none"
    if isinstance(a, torch.SymInt):
        return f"sym({dim(a)})"
    return f"enum({a})"


def target(t):
    if t is operator.getitem:
        return "operator.getitem"
    s = str(t)
    return s if not s.startswith("<") else getattr(t, "__name__", s)


def to_ir(gm_graph):
    lines = ["graph {"]
    for n in gm_graph.nodes:
        if n.op == "output":
            outs = n.args[0] if isinstance(n.args[0], (list, tuple)) else [n.args[0]]
            lines.append(f"  output ({', '.join(arg(o) for o in outs)})")
            continue
        ty = ttype(n.meta.get("val"))
        if n.op == "placeholder":
            rhs = "placeholder"
        elif n.op == "get_attr":
            rhs = f'get_attr "{n.target}"'
        else:
            args = [arg(a) for a in n.args] + [f"{k}={arg(v)}" for k, v in n.kwargs.items()]
            rhs = f"{target(n.target)}({', '.join(args)})"
        lines.append(f"  %{n.name} : {ty} = {rhs}")
    lines.append("}")
    return "\n".join(lines)


def post_grad(fn, *args, dynamic=False):
    import torch._inductor.config as cfg
    captured = []
    cfg.post_grad_custom_post_pass = lambda g: captured.append(to_ir(g))
    cfg.fx_graph_cache = False
    torch._dynamo.reset()
    torch.compile(fn, dynamic=dynamic)(*args)
    return captured[-1]


def exported(mod, *args):
    return to_ir(torch.export.export(mod, args).graph)


class ExportLinearGelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(256, 512, dtype=torch.bfloat16)

    def forward(self, x):
        return F.gelu(self.lin(x), approximate="tanh")


class ExportLinearSilu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(256, 512, dtype=torch.bfloat16)

    def forward(self, x):
        return F.silu(self.lin(x))


class MutBuf(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(512, 256, dtype=torch.bfloat16), requires_grad=False)
        self.register_buffer("acc", torch.zeros(64, 512, dtype=torch.bfloat16))

    def forward(self, x):
        h = x @ self.w.t()
        self.acc.add_(h)
        return torch.relu(h)


if __name__ == "__main__":
    import sys
    torch.manual_seed(0)
    bf = torch.bfloat16
    x = torch.randn(64, 256, dtype=bf); w = torch.randn(512, 256, dtype=bf)
    b = torch.randn(512, dtype=bf); r = torch.randn(64, 512, dtype=bf)
    x3 = torch.randn(4, 16, 256, dtype=bf)
    cases = {
        "gelu_tanh_linear": lambda: post_grad(lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), x, w, b),
        "linear3d_relu": lambda: post_grad(lambda x, w, b: F.relu(F.linear(x, w, b)), x3, w, b),
        "int8_wo": lambda: post_grad(lambda x, w, s: F.linear(x, w.to(bf) * s.unsqueeze(1)),
                                     x, torch.randint(-128, 127, (512, 256), dtype=torch.int8), torch.rand(512, dtype=bf)),
        "residual_silu_cast": lambda: post_grad(lambda x, w, b, r: (F.silu(F.linear(x, w, b)) + r).float(), x, w, b, r),
        "mm_dynamic": lambda: post_grad(lambda x, w: torch.relu(x @ w.t()), x, w, dynamic=True),
        "export_linear_gelu": lambda: exported(ExportLinearGelu(), x),
        "export_linear_silu_3d": lambda: exported(ExportLinearSilu(), x3),
        "bmm_scale": lambda: post_grad(lambda a, b: torch.bmm(a, b) * 0.125, torch.randn(2, 64, 32, dtype=bf), torch.randn(2, 32, 64, dtype=bf)),
        "baddbmm": lambda: post_grad(lambda c, a, b: torch.sigmoid(torch.baddbmm(c, a, b, beta=0.5, alpha=2.0)), torch.randn(2, 64, 64, dtype=bf), torch.randn(2, 64, 32, dtype=bf), torch.randn(2, 32, 64, dtype=bf)),
        "addmm_beta_alpha": lambda: post_grad(lambda c, a, b: torch.tanh(torch.addmm(c, a, b, beta=0.5, alpha=2.0)), b, x, w.t().contiguous()),
        "f64": lambda: post_grad(lambda x, w: torch.relu(x @ w), x.double(), w.t().double()),
        "misaligned": lambda: post_grad(lambda x, w: torch.relu(x @ w), torch.randn(64, 100, dtype=bf), torch.randn(100, 36, dtype=bf)),
        "fp8_dequant": lambda: post_grad(lambda x, w, s: x @ (w.to(bf) * s), x, torch.randn(256, 512).to(torch.float8_e4m3fn), torch.rand((), dtype=bf)),
        "zero_point": lambda: post_grad(lambda x, w, z, s: x @ ((w.to(bf) - z) * s).t(), x, torch.randint(-128, 127, (512, 256), dtype=torch.int8), torch.randn(512, 1, dtype=bf), torch.rand(512, 1, dtype=bf)),
        "extra_output": lambda: post_grad(lambda x, w, b: (lambda h: (torch.relu(h), h.sum()))(x @ w.t() + b), x, w, b),
        "row_col_full_scalar": lambda: post_grad(lambda x, w, r, c, f: ((x @ w.t()) * c + r) * 2.0 - f, x, w, b, torch.randn(64, 1, dtype=bf), r),
        "where_clamp": lambda: post_grad(lambda x, w: torch.where(x @ w.t() > 0, torch.clamp(x @ w.t(), max=6.0), 0.0), x, w),
        "mutation": lambda: post_grad(MutBuf(), x),
    }
    for name in (sys.argv[1:] or cases):
        print(f"# {name}\n{cases[name]()}\n")
