"""Random unpack/dequant pipelines: rewritten == eager (bit for bit), no crash. Usage: z_fuzz.py SEED COUNT"""
import sys, random
from common import *
bf = torch.bfloat16

class P(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c = cfg
        N, K = cfg["N"], cfg["K"]
        raw = cfg["raw"]
        shape = (N, K // 2) if cfg["layout"] == "nk" else (K // 2, N)
        if cfg["src"] == "t":
            self.register_buffer("w", packed(*shape[::-1], dtype=raw))
        else:
            self.register_buffer("w", packed(*shape, dtype=raw))
        G = cfg["G"]
        if cfg["layout"] == "nk":
            self.register_buffer("s", scale(N, K // G if G else 1))
            self.register_buffer("z", (torch.rand(N, K // G if G else 1) * 15).to(bf))
        else:
            self.register_buffer("s", scale(K // G if G else 1, N))
            self.register_buffer("z", (torch.rand(K // G if G else 1, N) * 15).to(bf))
    def forward(self, x):
        c = self.c; N, K, G = c["N"], c["K"], c["G"]
        w = self.w.t() if c["src"] == "t" else self.w
        kd = 1 if c["layout"] == "nk" else 0          # the packed dim
        lo = w & c["lo_mask"]
        hi = w >> c["shift"]
        if c["hi_mask"]: hi = hi & 15
        parts = [lo, hi] if not c["hi_first"] else [hi, lo]
        sd = kd + 1 + c["stack_off"]                   # stack dim (0 = interleave)
        sd_arg = sd if c["neg"] is False else sd - 3
        if c["spell"] == "stack":
            st = torch.stack(parts, sd_arg)
        else:
            st = torch.cat([p.unsqueeze(sd_arg) for p in parts], sd_arg)
        shape = list(w.shape); shape[kd] *= 2
        if c["merge"] == "view": q = st.reshape(shape) if c["stack_off"] else st.view(shape)
        elif c["merge"] == "reshape": q = st.reshape(shape)
        else: q = st.flatten(kd, kd + 1) if c["stack_off"] == 0 else st.reshape(shape)
        # post-unpack ops on the integer
        for op in c["post"]:
            if op == "roundtrip": q = q.view(*q.shape[:kd], 2, -1, *q.shape[kd + 1:]).reshape(q.shape)
            elif op == "roundtrip_t":
                a = q.view(*q.shape[:kd], 2, -1, *q.shape[kd + 1:])
                q = a.transpose(kd, kd + 1).reshape(q.shape)
            elif op == "clone": q = q.clone()
            elif op == "contig": q = q.contiguous()
            elif op == "unsq_sq": q = q.unsqueeze(0).squeeze(0)
            elif op == "tt": q = q.t().t()
        if c["conv"] == "direct": Wq = q.to(bf)
        elif c["conv"] == "f32": Wq = q.float().to(bf)
        else: Wq = q.to(torch.float16).to(bf)
        if G:
            if c["layout"] == "nk":
                Wg = Wq.view(N, K // G, G)
                Wg = Wg - (self.z[:, :, None] if c["zero"] == "z" else 8 if c["zero"] == "8" else 0)
                W = (Wg * self.s[:, :, None]).view(N, K) if c["scale"] else Wg.view(N, K)
            else:
                Wg = Wq.view(K // G, G, N)
                Wg = Wg - (self.z[:, None, :] if c["zero"] == "z" else 8 if c["zero"] == "8" else 0)
                W = (Wg * self.s[:, None, :]).view(K, N) if c["scale"] else Wg.view(K, N)
        else:
            W = Wq - (self.z if c["zero"] == "z" else 8 if c["zero"] == "8" else 0)
            if c["scale"]: W = W * self.s
        if c["layout"] == "nk":
            y = F.linear(x, W) if c["use"] == "linear" else x @ W.t()
        else:
            y = x @ W if c["use"] == "linear" else torch.mm(x.reshape(-1, K), W).view(*x.shape[:-1], N)
        return torch.relu(y) if c["act"] else y

def cfg_random(r):
    K = r.choice([4, 8, 16, 32, 64, 128])
    Gs = [0] + [g for g in (2, 4, 8, 16, 32, 64) if g <= K and K % g == 0]
    c = dict(N=r.choice([1, 2, 3, 4, 16, 32]), K=K, G=r.choice(Gs), layout=r.choice(["nk", "kn"]),
             src=r.choice(["plain", "plain", "t"]), raw=r.choice([torch.uint8, torch.uint8, torch.int8]),
             lo_mask=r.choice([15, 15, 15, 7, 31]), shift=r.choice([4, 4, 4, 3, 5]), hi_mask=r.random() < 0.5,
             hi_first=r.random() < 0.15, stack_off=r.choice([0, 0, 0, -1]), neg=r.random() < 0.5,
             spell=r.choice(["stack", "cat"]), merge=r.choice(["view", "reshape", "flatten"]),
             post=r.sample(["roundtrip", "roundtrip_t", "clone", "contig", "unsq_sq", "tt"], r.choice([0, 0, 1, 2])),
             conv=r.choice(["direct", "direct", "f32", "f16"]), zero=r.choice(["8", "z", "none"]), scale=r.random() < 0.8,
             use=r.choice(["linear", "other"]), act=r.random() < 0.5, M=r.choice([1, 3, 8]), x3d=r.random() < 0.3,
             dec=r.random() < 0.4)
    if LEGIT and r.random() < 0.85:
        c.update(lo_mask=15, shift=4, hi_first=False, stack_off=0)
        if c["raw"] == torch.int8: c["hi_mask"] = True
    return c

LEGIT = len(sys.argv) > 3
seed, count = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(seed)
fails = 0; folded = 0; ran = 0
for i in range(count):
    c = cfg_random(r)
    torch.manual_seed(seed * 1000 + i)
    try:
        m = P(c)
        x = torch.randn(*((2, c["M"]) if c["x3d"] else (c["M"],)), c["K"]).to(bf)
        want = m(x)
    except Exception as e:
        continue  # eager itself refuses this form
    ran += 1
    try:
        ep = torch.export.export(m, (x,))
        if c["dec"]: ep = ep.run_decompositions()
        ep2 = fxfuse.rewrite(ep, only_profitable=False)
        sp = specs(ep2)
        f = any(",p" in s or "[p" in s for s in sp)
        folded += f
        got = ep2.module()(x)
        x2 = torch.randn_like(x)
        ok = torch.equal(got, want) and torch.equal(ep2.module()(x2), m(x2))
        legit = (c["lo_mask"] == 15 and c["shift"] == 4 and not c["hi_first"] and c["stack_off"] == 0 and
                 (c["raw"] == torch.uint8 or c["hi_mask"]))
        if f and not legit:
            print("UNEXPECTED FOLD", i, c); fails += 1
        if not ok:
            print("MISMATCH", i, c, maxdiff(got, want), "folded", f); fails += 1
            for s in sp: print(s)
    except Exception as e:
        print("ERROR", i, c, "".join(traceback.format_exception_only(type(e), e))[:800]); fails += 1
print(f"seed {seed}: ran {ran}, folded {folded}, fails {fails}")
