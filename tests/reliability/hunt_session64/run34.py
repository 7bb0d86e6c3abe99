import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
class AM(torch.nn.Module):
    def __init__(self, K, N, G, dt, kind):
        super().__init__(); self.q = Q(K, N, G, sdtype=dt); self.kind = kind
        self.b = torch.nn.Parameter(torch.randn(N).to(dt)); self.b2 = torch.nn.Parameter(torch.randn(3, N).to(dt))
    def forward(self, x):
        W = self.q.weight().to(x.dtype)
        k = self.kind
        if k == "addmm_ab": return torch.addmm(self.b, x, W, beta=0.5, alpha=2.0)
        if k == "addmm_2d_bias": return torch.addmm(self.b2, x, W)
        if k == "baddbmm": return torch.baddbmm(self.b, x.unsqueeze(0).expand(2, -1, -1), W.unsqueeze(0).expand(2, -1, -1))
        if k == "addmm": return torch.addmm(self.b, x, W)
        if k == "bias_first": return self.b + x @ W
for dt in (torch.float32, torch.float16, torch.bfloat16):
    for k in ("addmm", "addmm_ab", "addmm_2d_bias", "baddbmm", "bias_first"):
        m = AM(512, 40, 128, dt, k)
        try:
            ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(3, 512).to(dt),)))
            nw = 0; tot = 0
            for t in range(4):
                xx = torch.randn(3, 512).to(dt); g, w = ep2.module()(xx), m(xx)
                nw += (g != w).sum().item(); tot += g.numel()
            print(f"{str(dt):15s} {k:14s}: {len(specs(ep2))} chains, {nw}/{tot} differ")
        except Exception as e:
            print(f"{str(dt):15s} {k:14s}: CRASH {type(e).__name__}: {str(e)[:200]}")
