import sys, copy; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
class Cond(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__(); self.a = Q(256, 64, 64, seed=1, **kw); self.b = Q(256, 64, 64, seed=2, **kw)
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x) + 1, (x,))
for kw in ({"wf_mode": "attr"}, {"wf_mode": "arange"}, {}):
    m = Cond(**kw)
    ref = copy.deepcopy(m)
    x = torch.randn(3, 256).half().abs() + 0.1   # true branch (a)
    ep2 = fxfuse.rewrite(torch.export.export(m, (x,)))
    mod = ep2.module()
    print(kw, "shares g_idx with model:", mod.a.g_idx.data_ptr() == m.a.g_idx.data_ptr())
    print("  before:", torch.equal(mod(x), ref(x)))
    perm = torch.randperm(256)
    mod.a.g_idx.copy_(mod.a.g_idx[perm].clone())
    ref.a.g_idx.copy_(ref.a.g_idx[perm].clone())
    try:
        print("  after act-order g_idx:", torch.equal(mod(x), ref(x)))
    except RuntimeError as e:
        print("  after: raised", "no longer holds" in str(e))
