import sys, re, os; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
f16, bf16 = torch.float16, torch.bfloat16
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
def expect_raise(name, fn, pat="no longer holds"):
    try:
        fn(); print(f"   NO-RAISE {name}")
    except Exception as e:
        ok = re.search(pat, str(e)) is not None
        print(f"   {'raised-ok' if ok else 'RAISED-OTHER'} {name}: {'' if ok else type(e).__name__ + ': ' + str(e)[:300]}")

# 3-bit: 10 values per word (wf 0,3,..,27) & 7
check("3-bit 10/word", Q(320, 40, 32, bits=3, wf_values=list(range(0, 30, 3))) if False else None, X(1,1)) if False else None
class Q3(Q):
    def __init__(self, K, N, G, **k):
        torch.nn.Module.__init__(self)
        self.K, self.N, self.G = K, N, G
        self.register_buffer("qweight", rand_int32(K // 10, N))
        self.register_buffer("qzeros", torch.randint(0, 8, (K // G, N), dtype=torch.int8))
        self.register_buffer("scales", (torch.rand(K // G, N) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", torch.arange(0, 30, 3, dtype=torch.int32).unsqueeze(0), persistent=False)
    def forward(self, x):
        w = torch.bitwise_right_shift(self.qweight.unsqueeze(1).expand(-1, 10, -1), self.wf.unsqueeze(-1))
        w = (w.to(torch.int8) & 7).reshape(self.K, self.N)
        g = self.g_idx.long()
        return x @ (self.scales[g] * (w - (self.qzeros & 7)[g])).half()
check("3-bit 10/word wf 0..27 &7", Q3(320, 40, 32), X(3, 320), show_spec=True)

# torch.cond
class Cond(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = Q(256, 64, 64, seed=1); self.b = Q(256, 64, 64, seed=2)
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x) + 1, (x,))
r = check("torch.cond two GPTQ branches", Cond(), X(3, 256))
if r:
    ep, ep2, mod = r
    print("   top-level specs:", len(specs(ep2)), "; submodules:", [n for n, _ in ep2.graph_module.named_children()])
    for n, sm in ep2.graph_module.named_children():
        print("     ", n, sum(1 for nd in sm.graph.nodes if nd.target == gemm_chain), "chains")
    print("   report:\n" + str(fxfuse.report(ep)))
    x = torch.randn(3, 256).half()
    for sgn in (1, -1):
        xx = x.abs() * sgn
        print("   cond branch", sgn, torch.equal(mod(xx), Cond.forward(r[0].module(), xx) if False else mod(xx)))
    m0 = Cond.__new__(Cond)
    # mutate g_idx of branch a inside cond
    for n, b in mod.named_buffers():
        pass
    print("   buffers:", [n for n, _ in mod.named_buffers()])
