"""f16/bf16 torch.addmm(b, x, W, beta=0.5, alpha=2.0) with a prologue-computed W: fused CPU result differs from eager."""
import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
class AM(torch.nn.Module):
    def __init__(self, K, N, dt, layout, beta, alpha):
        super().__init__()
        self.layout, self.beta, self.alpha = layout, beta, alpha
        shape = (K, N) if layout == "KN" else (N, K)
        self.register_buffer("w", torch.randint(-8, 8, shape, dtype=torch.int8))
        self.register_buffer("s", (torch.rand(1, N) * 0.02 + 0.001).to(dt))
        self.b = torch.nn.Parameter(torch.randn(N).to(dt))
    def forward(self, x):
        if self.layout == "KN": W = self.w.to(x.dtype) * self.s
        else: W = (self.w.to(x.dtype) * self.s.t()).t()
        return torch.addmm(self.b, x, W, beta=self.beta, alpha=self.alpha)
for dt in (torch.float32,):
    for layout in ("KN", "NK"):
        for beta, alpha in ((1, 1), (0.5, 2.0), (1, 0.5), (0.3, 1), (2, 3)):
            m = AM(512, 64, dt, layout, beta, alpha)
            ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(8, 512).to(dt),)))
            nw = tot = 0
            for t in range(8):
                xx = torch.randn(8, 512).to(dt); g, w = ep2.module()(xx), m(xx)
                nw += (g != w).sum().item(); tot += g.numel()
            chain = fxfuse.report(torch.export.export(m, (xx,))).entries[0].get("chain")
            print(f"{str(dt):15s} W {layout} beta={beta} alpha={alpha}: {nw}/{tot} differ   [{chain}]")
