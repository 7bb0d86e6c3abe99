import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
import torch.nn.functional as F
torch.manual_seed(0)
class KN(torch.nn.Module):   # f32 weight stored [K, N], a prologue, then F.linear(x, W.t(), b)
    def __init__(self, K, N, form, prologue=True):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(K, N)); self.s = torch.nn.Parameter(torch.rand(1, N))
        self.b = torch.nn.Parameter(torch.randn(N)); self.form = form; self.prologue = prologue
    def forward(self, x):
        W = self.w * self.s if self.prologue else self.w
        if self.form == "linear": return F.linear(x, W.t(), self.b)
        if self.form == "addmm": return torch.addmm(self.b, x, W)
        if self.form == "matmul_add": return x @ W + self.b
for dt in (torch.float32, torch.float16, torch.bfloat16):
    for form in ("linear", "addmm", "matmul_add"):
        for prologue in (True, False):
            for (K, N, M) in [(64, 64, 1), (256, 64, 3), (512, 40, 6)]:
                m = KN(K, N, form, prologue).to(dt)
                ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(M, K).to(dt),)))
                nw = 0
                for t in range(4):
                    xx = torch.randn(M, K).to(dt)
                    if not torch.equal(ep2.module()(xx), m(xx)): nw += 1
                print(f"{str(dt):15s} {form:10s} prologue={prologue!s:5s} K={K} N={N} M={M}: {len(specs(ep2))} chain, wrong {nw}/4")
