import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
for kw in [dict(prologue=False), dict(epilogue=False), dict(only_profitable=False), dict(min_m=8), dict(enabled=False)]:
    try:
        check(f"options {kw}", Q(256, 64, 64, bias=True), X(3, 256), show_report=False, **kw)
        ep = torch.export.export(Q(256, 64, 64, bias=True), (torch.randn(3, 256).half(),))
        print("    report(**kw):", [(e["status"], e.get("chain") or e.get("reason")) for e in fxfuse.report(ep, **kw).entries])
    except Exception as e:
        print("CRASH", kw, type(e).__name__, str(e)[:200])
# tied g_idx between two layers
class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = Q(256, 256, 64, seed=1); self.b = Q(256, 64, 64, seed=2); self.b.g_idx = self.a.g_idx
    def forward(self, x): return self.b(torch.relu(self.a(x)))
r = check("tied g_idx", Tied(), X(3, 256))
if r:
    mod = r[2]
    print("   buffers:", [n for n, _ in mod.named_buffers() if "g_idx" in n])
    g = mod.a.g_idx; g.copy_(g.flip(0))
    try: mod(torch.randn(3, 256).half()); print("   NO RAISE")
    except RuntimeError as e: print("   raised", "no longer holds" in str(e))
