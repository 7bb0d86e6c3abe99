# loss of fusion: contiguous 3-D F.linear whose seq dim is an affine symbolic size (Dim derived 2*s) is refused
from common import *
import torch.nn.functional as F
from torch.export import Dim
K, N = 96, 64
class M(torch.nn.Module):
    def __init__(s, b): super().__init__(); s.register_buffer("b", b)
    def forward(s, x, w): return torch.relu(F.linear(x, w, s.b))
dt = torch.bfloat16
x = torch.randn(4, 8, K).to(dt); w = torch.randn(N, K).to(dt); b = torch.randn(N).to(dt)
B = Dim("B", min=2, max=64); S = Dim("sq", min=2, max=64)
for name, ds in (("x:{0:B}", {"x": {0: B}, "w": None}), ("x:{0:B,1:sq}", {"x": {0: B, 1: S}, "w": None}),
                 ("x:{0:B,1:2*sq}", {"x": {0: B, 1: S * 2}, "w": None}), ("x:{0:B,1:sq+1}", {"x": {0: B, 1: S + 1}, "w": None})):
    xx = x if "sq+1" not in name else torch.randn(4, 9, K).to(dt)
    ep = torch.export.export(M(b), (xx, w), dynamic_shapes=ds)
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    print(name, "fused:", nfused(ep2)); print(fxfuse.report(ep2))
print("--- same graphs after run_decompositions (addmm on a view): is the shape itself fusable?")
for name, ds in (("x:{0:B,1:2*sq}", {"x": {0: B, 1: S * 2}, "w": None}), ("x:{0:B,1:sq+1}", {"x": {0: B, 1: S + 1}, "w": None})):
    xx = x if "sq+1" not in name else torch.randn(4, 9, K).to(dt)
    ep = torch.export.export(M(b), (xx, w), dynamic_shapes=ds).run_decompositions()
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    xr = torch.randn(3, 10 if "sq+1" not in name else 11, K).to(dt)
    cmp(f"{name} decomposed fused={nfused(ep2)}", ep2.module()(xr, w), M(b)(xr, w))
