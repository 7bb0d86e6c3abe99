import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
import torch.nn.functional as F
exec(open("./run23.py").read().split("check(")[0].split("torch.manual_seed(0)")[1])
torch.manual_seed(0)
for kind in ("linear", "addmm", "matmul_t"):
    m = NK(512, 40, 128, kind=kind, bias=True).float()
    ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(4, 512),)))
    nw = 0
    for t in range(4):
        xx = torch.randn(4, 512); nw += (ep2.module()(xx) != m(xx)).sum().item()
    print(kind, "f32 [N,K] storage:", nw, "elements differ")
