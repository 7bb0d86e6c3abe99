# aten.linear on a contiguous 3+-D input: torch 2.13's at::linear takes addmm only when the bias is 1-D after
# squeeze() AND contiguous (any input rank); the pass's rule (gemm_anchor.cpp) is "rank 3: always addmm; rank>3: bias 1-D"
from common import *
import torch.nn.functional as F
K, N = 96, 64
class M(torch.nn.Module):
    def __init__(s, b): super().__init__(); s.register_buffer("b", b)
    def forward(s, x, w): return torch.relu(F.linear(x, w, s.b))
dt = torch.bfloat16
def bias(kind, g):
    return {"0-d": lambda: torch.randn((), generator=g), "[1,N]": lambda: torch.randn(1, N, generator=g),
            "[N] expanded": lambda: torch.randn(1, generator=g).to(dt).expand(N),
            "[N] stride 2": lambda: torch.randn(2 * N, generator=g).to(dt)[::2], "[N]": lambda: torch.randn(N, generator=g)}[kind]().to(dt)  # .to() is a no-op for the already-bf16 views (they stay non-contiguous)
for xs, kind in (((3, 40, K), "0-d"), ((3, 40, K), "[N] expanded"), ((3, 40, K), "[N] stride 2"), ((2, 3, 40, K), "[1,N]"), ((2, 3, 40, K), "[N]")):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*xs, generator=g).to(dt); w = (torch.randn(N, K, generator=g) / K**.5).to(dt); b = bias(kind, g)
    assert kind not in ("[N] expanded", "[N] stride 2") or not b.is_contiguous()
    eager = F.linear(x, w, b)
    one = torch.addmm(b.reshape(-1) if b.dim() else b, x.reshape(-1, K), w.t()).reshape(eager.shape)
    two = x @ w.t() + b
    m = M(b); ep, nf = export_fused(m, (x, w))
    got = ep.module()(x, w); want = m(x, w)
    print(f"x{list(xs)} bias {kind:13s}: eager is {'addmm' if torch.equal(eager, one) else 'matmul+add' if torch.equal(eager, two) else '?'}; "
          f"fused={nf}: {int((got != want).sum())} of {want.numel()} differ from eager "
          f"(vs one rounding {int((got != torch.relu(one)).sum())}, vs two {int((got != torch.relu(two)).sum())})")
