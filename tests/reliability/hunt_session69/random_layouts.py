import torch, torch.nn.functional as F, fxfuse, itertools, random
torch.manual_seed(1); random.seed(1)
K, N = 1024, 64
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.register_buffer("w", torch.randn(N, K)/K**.5); s.register_buffer("b", torch.randn(N)); s.register_buffer("s", torch.rand(K)+.5)
    def forward(s, x): return torch.relu(F.linear(x * s.s, s.w, s.b))
m = M()
bad = 0; n = 0
for trial in range(40):
    rank = random.choice([3, 4])
    lead = [random.choice([1, 2, 3, 4, 8, 16]) for _ in range(rank - 1)]
    perm = list(range(rank - 1)); random.shuffle(perm)
    base_sizes = [lead[p] for p in perm]
    slice_k = random.choice([True, False]); slice_lead = random.choice([True, False])
    def mk():
        t = torch.randn(*[sz * (2 if (slice_lead and i == 0) else 1) for i, sz in enumerate(base_sizes)], 2 * K if slice_k else K)
        if slice_lead: t = t[::2]
        t = t[..., :K]
        inv = [perm.index(i) for i in range(rank - 1)] + [rank - 1]
        return t.permute(*inv)
    x = mk()
    try:
        fm = fxfuse.rewrite(torch.export.export(m, (x,)), only_profitable=False).module()
    except Exception as e:
        print('export/rewrite failed', e.__class__.__name__); continue
    x = mk()
    with torch.no_grad(): want, got = m(x), fm(x)
    n += 1
    if not torch.equal(want, got):
        bad += 1; print('MISMATCH', tuple(x.shape), x.stride(), (x*m.s).stride(), int((want!=got).sum()))
print('cases', n, 'mismatches', bad)
