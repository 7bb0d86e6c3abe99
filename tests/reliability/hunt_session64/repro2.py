import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
f32 = torch.float32
class Int8Lin(torch.nn.Module):   # a non-GPTQ prologue: int8 weight * per-channel scale
    def __init__(self, K, N, bias, form):
        super().__init__()
        self.register_buffer("w", torch.randint(-128, 128, (N, K), dtype=torch.int8))
        self.register_buffer("s", torch.rand(N, 1) * 0.01)
        self.b = torch.nn.Parameter(torch.randn(N)) if bias else None
        self.form = form
    def forward(self, x):
        W = self.w.float() * self.s
        if self.form == "linear": return F.linear(x, W, self.b)
        if self.form == "matmul": return x @ W.t() + self.b
        if self.form == "addmm": return torch.addmm(self.b, x, W.t())
class Dq(torch.nn.Module):        # a plain f32 weight * scale prologue
    def __init__(self, K, N):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(N, K)); self.s = torch.nn.Parameter(torch.rand(N, 1))
        self.b = torch.nn.Parameter(torch.randn(N))
    def forward(self, x):
        return F.linear(x, self.w * self.s, self.b)
K, N, M = 64, 64, 1
cases = [
  ("GPTQ f32 linear no bias", Q(K, N, 16, sdtype=f32, form="linear")),
  ("GPTQ f32 linear + bias", Q(K, N, 16, sdtype=f32, form="linear", bias=True)),
  ("GPTQ f32 matmul + bias", Q(K, N, 16, sdtype=f32, form="matmul", bias=True)),
  ("int8*scale f32 linear+bias", Int8Lin(K, N, True, "linear")),
  ("int8*scale f32 matmul + b", Int8Lin(K, N, True, "matmul")),
  ("int8*scale f32 addmm", Int8Lin(K, N, True, "addmm")),
  ("f32 w*s linear+bias", Dq(K, N)),
]
for name, m in cases:
    ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(M, K),)))
    nw = 0; md = 0
    for t in range(5):
        xx = torch.randn(M, K)
        g, w = ep2.module()(xx), m(xx)
        if not torch.equal(g, w): nw += 1; md = max(md, (g - w).abs().max().item())
    print(f"{name:30s}: {len(specs(ep2))} chain, wrong {nw}/5 maxdiff {md:.3g}", [l for l in specs(ep2)[0].splitlines() if "mm" in l or "add" in l] if specs(ep2) else "")
