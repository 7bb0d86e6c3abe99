import sys, random, traceback; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
from torch.export import Dim
import torch.nn.functional as F
seed = int(sys.argv[1]); n = int(sys.argv[2])
rng = random.Random(seed)
f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32
i8, i16, i32, i64, u8 = torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8
class Wrap(torch.nn.Module):
    def __init__(self, q, epi, twice):
        super().__init__(); self.q = q; self.epi = epi; self.twice = twice
    def forward(self, x):
        y = self.q(x)
        if self.twice and y.shape[-1] == x.shape[-1]:
            y = self.q(torch.tanh(y))
        if self.epi == "relu": y = torch.relu(y)
        elif self.epi == "gelu": y = F.gelu(y)
        elif self.epi == "silu": y = F.silu(y)
        elif self.epi == "res" and y.shape[-1] == x.shape[-1]: y = y + x
        elif self.epi == "scale": y = y * 0.125 - 1
        return y
bad = 0; ran = 0; crashes = 0
for it in range(n):
    bits = rng.choice([4, 4, 4, 2, 8])
    pf = 32 // bits
    G = rng.choice([8, 16, 32, 64, 128])
    K = rng.choice([G * k for k in (1, 2, 3, 4)] + [256])
    K = max(K, pf) // pf * pf
    if K % G and rng.random() < 0.7: K = G * max(1, K // G)
    N = rng.choice([8, 16, 40, 64, 128]) // pf * pf or pf * 2
    N = max(N, pf)
    cfg = dict(bits=bits, sdtype=rng.choice([f16, bf16, f32]), dq=rng.choice([i8, i8, i16, i32, i64, u8, None]),
               zdq=rng.choice([i8, i8, i32, None]), and_first=rng.random() < 0.3,
               zmode=rng.choice(["new", "new", "old_plus1_before_and", "old_plus1_after_and"]),
               gidx_dtype=rng.choice([i32, i32, i64]), act_order=rng.random() < 0.2, bias=rng.random() < 0.4,
               wf_mode=rng.choice(["persistent", "nonpersistent", "attr", "arange"]),
               form=rng.choice(["matmul", "linear", "reshape2d", "at"]), group=rng.choice(["gidx", "gidx", "gidx", "view", "repeat"]),
               out_cast=rng.random() < 0.8, seed=it)
    if cfg["group"] in ("view", "repeat") and (K % G or cfg["act_order"]): cfg["group"] = "gidx"
    xdt = rng.choice([cfg["sdtype"], f16, bf16, f32])
    cfg["xdtype"] = xdt
    lead = rng.choice([(1,), (3,), (2, 3), (2, 1, 3), (17,)])
    epi = rng.choice([None, "relu", "gelu", "silu", "res", "scale"])
    twice = rng.random() < 0.15 and K == N
    dyn = rng.random() < 0.25
    desc = f"it={it} K={K} N={N} G={G} lead={lead} xdt={xdt} epi={epi} twice={twice} dyn={dyn} {cfg}"
    try:
        model = Wrap(Q(K, N, G, **cfg), epi, twice)
        x = torch.randn(*lead, K).to(xdt)
        model(x)
    except Exception:
        continue   # eager refuses this combination
    try:
        ds = None
        if dyn:
            ds = {"x": {0: Dim("b", min=1, max=64)}}
            if lead[0] == 1: x = torch.randn(2, *lead[1:], K).to(xdt)
        ep = torch.export.export(model, (x,), dynamic_shapes=ds)
        rep = fxfuse.report(ep)
        ep2 = fxfuse.rewrite(ep)
        mod = ep2.module()
        ran += 1
        for t in range(2):
            xx = torch.randn(*x.shape).to(xdt)
            if dyn and t == 1: xx = torch.randn(5, *x.shape[1:]).to(xdt)
            got, want = mod(xx), model(xx)
            if not (got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)):
                bad += 1
                print("WRONG", desc, (got.double() - want.double()).abs().max().item() if got.shape == want.shape else (got.shape, want.shape))
                break
    except Exception as e:
        crashes += 1
        print("CRASH", desc, type(e).__name__, str(e)[:300])
print(f"seed {seed}: ran {ran}, wrong {bad}, crashes {crashes}")
