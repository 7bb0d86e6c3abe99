import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
f32 = torch.float32
for lead in [(1,), (4,), (2, 3), (2, 2, 5)]:
    for K, N, G in [(64, 64, 16), (512, 40, 128), (1024, 256, 128)]:
        m = Q(K, N, G, sdtype=f32, bias=True, form="linear")
        ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(*lead, K),)))
        nw = 0; tot = 0
        for t in range(4):
            xx = torch.randn(*lead, K); g, w = ep2.module()(xx), m(xx)
            nw += (g != w).sum().item(); tot += g.numel()
        print(f"lead={lead} K={K} N={N}: {nw}/{tot} elements differ")
