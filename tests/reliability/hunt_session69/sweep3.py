import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, collections, torch.nn.functional as F
from harness import check
from models import *
B, R, K, N = 64, 2, 1024, 128
MODES = ("no_grad", "enable_grad", "inference")

class WView(torch.nn.Module):
    """weight parameter reached through a view / no-op in forward"""
    def __init__(s, kind, dtype=torch.float32, param=True):
        super().__init__(); s.kind = kind
        shape = (K, N) if kind in ("matmul_plain",) else (N, K) if kind not in ("slice_rows", ) else (2 * N, K)
        w = (torch.randn(*shape) / K ** 0.5).to(dtype)
        if param: s.w = torch.nn.Parameter(w)
        else: s.register_buffer("w", w)
        s.register_buffer("b", torch.randn(N).to(dtype))
    def forward(s, x):
        k = s.kind
        if k == "matmul_t": y = x @ s.w.t()
        elif k == "matmul_T": y = torch.matmul(x, s.w.T)
        elif k == "slice_rows": y = F.linear(x, s.w[:N])
        elif k == "float": y = F.linear(x, s.w.float())
        elif k == "contig": y = F.linear(x, s.w.contiguous())
        elif k == "view": y = F.linear(x, s.w.view(N, K))
        elif k == "tt": y = F.linear(x, s.w.t().t())
        elif k == "detach": y = F.linear(x, s.w.detach())
        elif k == "mul1": y = F.linear(x, s.w * 1.0)
        elif k == "matmul_plain": y = x @ s.w
        return torch.relu(y + s.b)

results = []
for lay in ["t01", "contig", "p4"]:
    mx = lambda lay=lay: (mk_layout(lay, B, R, K, torch.float32),)
    for kind in ["matmul_t", "matmul_T", "slice_rows", "float", "contig", "view", "tt", "detach", "mul1", "matmul_plain"]:
        for param in [True, False]:
            results.append(check(f"WView {kind} param={param} {lay}", WView(kind, param=param), mx, modes=MODES))
    # x requires grad
    for rg in [True, False]:
        m = Linear(K, N, torch.float32); m.requires_grad_(rg)
        def mxg(lay=lay):
            x = mk_layout(lay, B, R, K, torch.float32).detach().requires_grad_(); return (x,)
        results.append(check(f"Linear rg={rg} x.requires_grad {lay}", m, mxg, modes=("enable_grad", "no_grad")))
        results.append(check(f"Dequant sp={rg} x.requires_grad {lay}", Dequant(K, N, torch.float32, rg), mxg, modes=("enable_grad", "no_grad")))

# batch-1 leading dim, transposed
for dt in [torch.float32, torch.bfloat16]:
    mx = lambda dt=dt: (torch.randn(R * 8, 1, K).to(dt).transpose(0, 1),)
    results.append(check(f"Matmul buffer batch1 [1,{R*8},K] strides ({K},{K},1) {dt}", Matmul(K, N, dt), mx))
    mx = lambda dt=dt: (torch.randn(1, B, K).to(dt).transpose(0, 1),)
    results.append(check(f"Matmul buffer rows1 [B,1,K] transposed {dt}", Matmul(K, N, dt), mx))
    results.append(check(f"Prologue scale rows1 [B,1,K] transposed {dt}", Prologue(K, N, 1, "scale", dt), mx))
    mx = lambda dt=dt: (torch.randn(B, K).to(dt)[:, None, :],)
    results.append(check(f"Prologue scale rows1 unsqueeze {dt}", Prologue(K, N, 1, "scale", dt), mx))
    mx = lambda dt=dt: (torch.randn(K, R, B).to(dt).permute(2, 1, 0),)
    results.append(check(f"Matmul K-strided permute(2,1,0) {dt}", Matmul(K, N, dt), mx))
    results.append(check(f"Prologue scale K-strided permute(2,1,0) {dt}", Prologue(K, N, R, "scale", dt), mx))
    results.append(check(f"Dequant K-strided permute(2,1,0) {dt}", Dequant(K, N, dt), mx))

# token scale: x * ts where ts [B,R,1] an input
class TokScale(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.register_buffer("w", torch.randn(N, K) / K ** 0.5); s.register_buffer("b", torch.randn(N))
    def forward(s, x, ts):
        return torch.relu(F.linear(x * ts, s.w, s.b))
for lay in ["t01", "contig"]:
    results.append(check(f"TokScale x {lay}, ts contig", TokScale(), lambda lay=lay: (mk_layout(lay, B, R, K, torch.float32), torch.rand(B, R, 1) + 0.5)))
    results.append(check(f"TokScale x {lay}, ts t01", TokScale(), lambda lay=lay: (mk_layout(lay, B, R, K, torch.float32), (torch.rand(R, B, 1) + 0.5).transpose(0, 1))))
print(collections.Counter(r[0] for r in results))
