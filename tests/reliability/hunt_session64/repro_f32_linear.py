import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
class Lin(torch.nn.Module):
    def __init__(self, K, N, dt):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(N, K).to(dt)); self.b = torch.nn.Parameter(torch.randn(N).to(dt))
    def forward(self, x):
        return F.linear(x, self.w, self.b)
for dt in (torch.float32, torch.float16, torch.bfloat16):
    for K, N, M in [(24, 16, 1), (512, 40, 6), (256, 64, 3), (64, 64, 1), (1024, 256, 17)]:
        for name, mk in [("plain Linear", lambda: Lin(K, N, dt)), ("GPTQ linear", lambda: Q(K, N, 8 if K == 24 else 64, sdtype=dt, bias=True, form="linear"))]:
            m = mk()
            x = torch.randn(M, K).to(dt)
            ep2 = fxfuse.rewrite(torch.export.export(m, (x,)))
            nw = 0
            for t in range(5):
                xx = torch.randn(M, K).to(dt)
                g, w = ep2.module()(xx), m(xx)
                if not torch.equal(g, w): nw += 1
            print(f"{str(dt):15s} K={K:4d} N={N:3d} M={M:2d} {name:12s}: {len(specs(ep2))} chain, wrong {nw}/5")
