"""Test-case generator: prints the post-grad (or exported) FX graph of a small model in the
fxfuse IR text form (docs/ir.md), so tests/pass/*.ir mirror what PyTorch really produces.
The text comes from the production exporter (python/fxfuse/ir_export.py); the only change is
that the models are traced on the CPU and recorded as if on cuda:0, the device the pass is for.

  PYTHONPATH=python python3 tests/pass/gen/fx_to_ir.py [case ...]   # prints the cases below
"""
import re

import torch
import torch.nn.functional as F

from fxfuse.ir_export import graph_to_ir


def to_ir(gm_graph):
    text = graph_to_ir(gm_graph)
    return re.sub(r"@cpu\b", "@cuda:0", text).replace("device(cpu)", "device(cuda:0)")


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
