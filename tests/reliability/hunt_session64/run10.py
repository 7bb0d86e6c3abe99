import sys, re, os; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
from torch.export import Dim
import torch.nn.functional as F
torch.manual_seed(0)
f16, bf16 = torch.float16, torch.bfloat16
def expect_raise(name, fn, pat="no longer holds"):
    try:
        fn(); print(f"   NO-RAISE {name}")
    except Exception as e:
        ok = re.search(pat, str(e)) is not None
        print(f"   {'raised-ok' if ok else 'RAISED-OTHER'} {name}: {'' if ok else type(e).__name__ + ': ' + str(e)[:300]}")

class Cond(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = Q(256, 64, 64, seed=1); self.b = Q(256, 64, 64, seed=2)
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x) + 1, (x,))
class Shared(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Q(256, 128, 64, seed=1); self.b = Q(128, 64, 32, seed=2, wf_mode="attr"); self.b.wf = self.a.wf
    def forward(self, x):
        return self.b(torch.relu(self.a(x)))

cases = [
    ("persistent", lambda: Q(256, 64, 64, wf_mode="persistent", bias=True), (3, 256), None, f16),
    ("nonpersistent", lambda: Q(256, 64, 64, bias=True), (3, 256), None, f16),
    ("attr", lambda: Q(256, 64, 64, wf_mode="attr", sdtype=bf16), (3, 256), None, bf16),
    ("dynamic", lambda: Q(256, 64, 64, bias=True), (3, 256), {"x": {0: Dim("b", min=1, max=32)}}, f16),
    ("act_order", lambda: Q(256, 64, 64, act_order=True), (3, 256), None, f16),
    ("cond", Cond, (3, 256), None, f16),
    ("shared", Shared, (3, 256), None, f16),
]
for name, mk, shp, dyn, dt in cases:
    print("==", name)
    try:
        model = mk()
        x = torch.randn(*shp).to(dt)
        ep2 = fxfuse.rewrite(torch.export.export(model, (x,), dynamic_shapes=dyn))
        path = f"./{name}.pt2"
        torch.export.save(ep2, path)
        ep3 = torch.export.load(path)
        mod = ep3.module()
        for M in (3, 1, 5):
            x = torch.randn(M, shp[1]).to(dt)
            if name == "cond":
                for sg in (1, -1):
                    xx = x.abs() * sg + 0.01 * sg
                    print("   ", M, sg, torch.equal(mod(xx), model(xx)))
            else:
                if dyn is None and M != 3: continue
                print("   M", M, torch.equal(mod(x), model(x)))
        # report on loaded program
        try:
            print("   report of loaded rewritten:", str(fxfuse.report(ep3)).strip().splitlines()[1][:150])
        except Exception as e:
            print("   REPORT CRASH on loaded", type(e).__name__, str(e)[:300])
        # rewrite again the loaded program
        try:
            ep4 = fxfuse.rewrite(ep3); x = torch.randn(*shp).to(dt)
            print("   re-rewrite ok", torch.equal(ep4.module()(x), model(x)))
        except Exception as e:
            print("   RE-REWRITE CRASH", type(e).__name__, str(e)[:300])
        # mutations
        bufs = dict(mod.named_buffers())
        consts = {n: getattr(mod, n) for n in dir(mod) if isinstance(getattr(mod, n, None), torch.Tensor)}
        print("   buffers:", list(bufs), "attr tensors:", [n for n in consts if n not in bufs])
        gname = [n for n in bufs if n.endswith("g_idx")][0]
        g = bufs[gname]; old = g.clone()
        g.copy_(g.flip(0))
        x = torch.randn(*shp).to(dt)
        if name == "act_order":
            print("   act_order flipped g_idx equal:", torch.equal(mod(x), (lambda: (model.g_idx.copy_(model.g_idx.flip(0)), model(x))[1])()))
            model.g_idx.copy_(old)
        else:
            expect_raise(f"{gname} flip", lambda: mod(x))
        g.copy_(old)
        wfs = [(n, t) for n, t in list(bufs.items()) + list(consts.items()) if t.dtype == torch.int32 and t.shape == (1, 8)]
        for n, t in wfs[:1]:
            t[0, 1] = 5
            expect_raise(f"wf {n} write", lambda: mod(x))
            t[0, 1] = 4
        print("   restored", torch.equal(mod(x), model(x)))
    except Exception as e:
        import traceback; traceback.print_exc(limit=-3)
        print("   CRASH", type(e).__name__, str(e)[:400])
