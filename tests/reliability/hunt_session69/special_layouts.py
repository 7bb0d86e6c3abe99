import torch, torch.nn.functional as F, fxfuse
K, N = 1024, 64
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.register_buffer("w", torch.randn(N, K)/K**.5); s.register_buffer("b", torch.randn(N)); s.register_buffer("s", torch.rand(K)+.5)
    def forward(s, x): return torch.relu(F.linear(x * s.s, s.w, s.b))
class P(M):
    def forward(s, x): return torch.relu(F.linear(x, s.w, s.b))
mks = {
 'expand_rows': lambda: torch.randn(64, 1, K).expand(64, 2, K),
 'expand_t': lambda: torch.randn(1, 64, K).expand(2, 64, K).transpose(0, 1),
 'size1_mid': lambda: torch.randn(2, 1, 64, K).permute(2, 1, 0, 3),
 'size1_lead_t': lambda: torch.randn(2, 64, 1, K).permute(2, 1, 0, 3),
 'k_strided': lambda: torch.randn(2, 64, K, 2)[..., 0].transpose(0, 1),
}
for cls in (M, P):
  m = cls()
  for name, mk in mks.items():
    try:
        fm = fxfuse.rewrite(torch.export.export(m, (mk(),)), only_profitable=False).module()
    except Exception as e:
        print(cls.__name__, name, 'rewrite failed', type(e).__name__, str(e)[:100]); continue
    x = mk()
    with torch.no_grad(): want, got = m(x), fm(x)
    print(cls.__name__, name, x.stride(), 'equal' if torch.equal(want, got) else f'MISMATCH {int((want!=got).sum())}')
