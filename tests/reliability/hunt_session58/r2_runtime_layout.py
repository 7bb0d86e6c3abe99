# export traced on a contiguous input; the fused program is then called with a non-contiguous input of the same shape
from common import *
import torch.nn.functional as F
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(s, b): super().__init__(); s.b = torch.nn.Parameter(b, requires_grad=False)
    def forward(s, x, w): return torch.relu(F.linear(x, w, s.b))
K, N = 256, 128
for dt in (torch.bfloat16,):
    w = (torch.randn(N, K) / K**0.5).to(dt); b = torch.randn(N).to(dt)
    m = M(b)
    xc = torch.randn(4, 32, K).to(dt)
    xn = torch.randn(32, 4, K).to(dt).transpose(0, 1)   # [4,32,K] non-contiguous
    for trace, call in (("contig", "noncontig"), ("noncontig", "contig")):
        xt = xc if trace == "contig" else xn; xr = xn if call == "noncontig" else xc
        ep, nf = export_fused(m, (xt, w))
        want = m(xr, w)
        plain = torch.export.export(m, (xt, w)).module()(xr, w)
        cmp(f"traced {trace}, called {call}: fused={nf} plain-ep", plain, want)
        cmp(f"traced {trace}, called {call}: fused={nf} fxfuse", ep.module()(xr, w), want)
