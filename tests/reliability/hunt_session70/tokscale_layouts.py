"""Session 70: random layouts of a transposed activation and a per-token scale (`x * ts`, `ts * x`, `x / ts`) before
F.linear, the CPU reference against eager bit for bit after the per-token layout rule (runtime/reference_eval.cpp
rowWiseProloguesStrides). Run: PYTHONPATH=python python tests/reliability/hunt_session70/tokscale_layouts.py
(session 70 at c1a4a2b: ok 19, mismatch 0; not fused 17, each an activation whose k is not innermost in memory)."""
import itertools, random, torch, torch.nn.functional as F, fxfuse
random.seed(7); torch.manual_seed(7)
B, R, K, N = 32, 3, 1024, 64
class Tok(torch.nn.Module):
    def __init__(s, form):
        super().__init__(); s.form = form
        s.register_buffer("w", torch.randn(N, K) / K ** 0.5); s.register_buffer("b", torch.randn(N))
    def forward(s, x, ts):
        a = {"mul": lambda: x * ts, "rmul": lambda: ts * x, "div": lambda: x / ts, "cast_mul": lambda: x.double().float() * ts}[s.form]()
        return torch.relu(F.linear(a, s.w, s.b))
def layout(shape, perm, pad):
    # a tensor of `shape` whose memory order is `perm` (outermost first), optionally a slice of a wider last-in-memory dim
    mem = [shape[p] for p in perm]
    if pad: mem[-1] *= 2
    t = torch.randn(*mem)
    if pad: t = t[..., : shape[perm[-1]]]
    inv = [perm.index(i) for i in range(len(shape))]
    return t.permute(*inv)
bad = ok = nf = 0
for trial in range(36):
    form = random.choice(["mul", "rmul", "div"])
    xperm = random.choice([(1, 0, 2), (0, 1, 2), (1, 2, 0), (2, 1, 0)])
    tperm = random.choice(list(itertools.permutations(range(3))))
    xpad = random.random() < 0.3
    mk = lambda: (layout((B, R, K), xperm, xpad), layout((B, R, 1), tperm, False).abs() + 0.5)
    m = Tok(form)
    try:
        ep = fxfuse.rewrite(torch.export.export(m, mk()), only_profitable=False)
    except Exception as e:
        print("rewrite error", form, xperm, tperm, e); continue
    fused = sum(str(n.target) == "fxfuse.gemm_chain.default" for n in ep.graph.nodes)
    if not fused: nf += 1; continue
    fm = ep.module(); args = mk()
    with torch.no_grad(): want, got = m(*args), fm(*args)
    d = int((want != got).sum())
    if d: bad += 1; print(f"MISMATCH {form} x{xperm}{' pad' if xpad else ''} ts{tperm}: {d}/{want.numel()}")
    else: ok += 1
print("ok", ok, "mismatch", bad, "not fused", nf)
