import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
class Cond(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__(); self.a = Q(256, 64, 64, seed=1, **kw); self.b = Q(256, 64, 64, seed=2, **kw)
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x) + 1, (x,))
class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = Q(256, 64, 64, seed=1)
    def forward(self, x):
        y = self.a(x)
        return torch.cond(x.sum() > 0, lambda x: self.a(x) * 2, lambda x: self.a(x) + 1, (x,)) + y
def X():
    x = torch.randn(3, 256).half()
    return (x if torch.rand(()) < 0.5 else -x.abs(),)
for name, m in [("cond wf arange", Cond(wf_mode="arange")), ("cond wf attr", Cond(wf_mode="attr")), ("layer outside and inside cond", Outer())]:
    r = check(name, m, X, trials=6, show_spec=True)
    if r:
        ep, ep2, mod = r
        for n, sm in ep2.graph_module.named_children():
            for nd in sm.graph.nodes:
                if nd.target == gemm_chain: print("   ", n, "spec:", nd.args[1].replace("\n", " | ")[:400])
        # mutate g_idx: does everything raise / stay right?
        gi = mod.a.g_idx
        gi.copy_(gi.flip(0))
        x = torch.randn(3, 256).half()
        try:
            got = mod(x); m.a.g_idx.copy_(m.a.g_idx.flip(0)); want = m(x); m.a.g_idx.copy_(m.a.g_idx.flip(0))
            print("   after g_idx flip: ran, equal =", torch.equal(got, want))
        except RuntimeError as e:
            print("   after g_idx flip: raised", "no longer holds" in str(e))
