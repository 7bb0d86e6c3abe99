import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
class Cond(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = Q(256, 64, 64, seed=1); self.b = Q(256, 64, 64, seed=2)
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x) + 1, (x,))
m = Cond()
x = torch.randn(3, 256).half()
ep2 = fxfuse.rewrite(torch.export.export(m, (x,)))
torch.export.save(ep2, "./cond.pt2")
mod = torch.export.load("./cond.pt2").module()
for sg in (1, -1):
    xx = torch.randn(3, 256).half().abs() * sg
    print("cond save/load branch", sg, torch.equal(mod(xx), m(xx)))
# export -> save -> load -> rewrite
for wf_mode in ("nonpersistent", "attr", "persistent"):
    q = Q(256, 64, 64, wf_mode=wf_mode, bias=True)
    torch.export.save(torch.export.export(q, (x,)), f"./plain_{wf_mode}.pt2")
    ep = torch.export.load(f"./plain_{wf_mode}.pt2")
    e = fxfuse.report(ep).entries[0]
    ep2 = fxfuse.rewrite(ep)
    mm = ep2.module()
    xx = torch.randn(3, 256).half()
    print(wf_mode, "load then rewrite:", torch.equal(mm(xx), q(xx)), e["chain"])
    mm.g_idx.copy_(mm.g_idx.flip(0))
    try:
        mm(xx); print("   NO RAISE")
    except RuntimeError as err:
        print("   raised", "no longer holds" in str(err))
