import sys, re; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
def expect_raise(name, fn, pat="no longer holds"):
    try:
        fn(); print(f"   NO-RAISE {name}")
    except Exception as e:
        ok = re.search(pat, str(e)) is not None
        print(f"   {'raised-ok' if ok else 'RAISED-OTHER'} {name}: {'' if ok else type(e).__name__ + ': ' + str(e)[:300]}")
class MutAfter(Q):
    def forward(self, x):
        y = super().forward(x)
        self.wf.add_(4)      # wf changes after use
        return y
class MutGAfter(Q):
    def forward(self, x):
        y = super().forward(x)
        self.g_idx.copy_(self.g_idx.flip(0))
        return y
class MutNoop(Q):
    def forward(self, x):
        y = super().forward(x)
        self.g_idx.add_(0)
        return y
for cls in (MutAfter, MutGAfter, MutNoop):
    eager = cls(256, 64, 64, wf_mode="persistent")
    twin = cls(256, 64, 64, wf_mode="persistent")
    x = torch.randn(3, 256).half()
    ep = torch.export.export(twin, (x,))
    try:
        print(cls.__name__, "report:", [(e["status"], e.get("chain")) for e in fxfuse.report(ep).entries])
        mod = fxfuse.rewrite(ep).module()
    except Exception as e:
        print("CRASH", cls.__name__, e); continue
    # twin's buffers were used by export; ep holds its own copy? compare to a fresh eager with same init
    for i in range(3):
        x = torch.randn(3, 256).half()
        try:
            got = mod(x)
        except RuntimeError as e:
            want = eager(x)
            print(f"   call {i}: raised ({'no longer holds' in str(e)})")
            continue
        want = eager(x)
        print(f"   call {i}: equal={torch.equal(got, want)}")
