import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, torch.nn.functional as F
from harness import check
from models import mk_layout
B, R, K, N = 64, 2, 1024, 128
class M(torch.nn.Module):
    def __init__(s, kind):
        super().__init__(); s.kind = kind; s.w = torch.nn.Parameter(torch.randn(N, K) / K ** 0.5); s.register_buffer("b", torch.randn(N))
    def forward(s, x):
        w = {"to_dtype": lambda: s.w.to(torch.float32), "type_as": lambda: s.w.type_as(x), "to_xdtype": lambda: s.w.to(x.dtype),
             "float_t_mm": None}.get(s.kind)
        if s.kind == "float_t_mm": return torch.relu(x @ s.w.float().t() + s.b)
        return torch.relu(F.linear(x, w(), s.b))
for k in ["to_dtype", "type_as", "to_xdtype", "float_t_mm"]:
    check(f"noop weight cast {k}", M(k), lambda: (mk_layout("t01", B, R, K, torch.float32),), modes=("no_grad", "inference", "enable_grad"))
# layout at call differs from export (documented limit) -- note only
class L(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.register_buffer("w", torch.randn(N, K) / K ** 0.5); s.register_buffer("b", torch.randn(N))
    def forward(s, x): return torch.relu(F.linear(x, s.w, s.b))
import fxfuse
for ex, call in [("contig", "t01"), ("t01", "contig"), ("t01", "t01_nd")]:
    m = L(); fm = fxfuse.rewrite(torch.export.export(m, (mk_layout(ex, B, R, K, torch.float32),)), only_profitable=False).module()
    x = mk_layout(call, B, R, K, torch.float32)
    try:
        with torch.no_grad(): want, got = m(x), fm(x)
        print(f"[layout-limit] export {ex} call {call}: equal={torch.equal(want, got)} differing={int((want!=got).sum())}/{want.numel()}")
    except Exception as e:
        print(f"[layout-limit] export {ex} call {call}: raises {type(e).__name__}: {str(e)[:200]}")
