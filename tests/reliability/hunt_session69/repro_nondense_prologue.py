"""Documented gap (docs/STATUS.md 'Not followed: a prologue over two row-wise inputs or a non-dense activation'):
an elementwise prologue (x * s over K, or x.float() of bf16/fp16) on a transposed NON-dense activation. Eager's
elementwise result keeps the transposed order (dense), so eager's matmul runs bmm; the reference keeps one mm.
Also x * ts with a per-token scale ts [B,R,1] (two row-wise inputs)."""
import torch, torch.nn.functional as F, fxfuse
torch.manual_seed(0)
B, R, K, N = 64, 2, 1024, 128
class M(torch.nn.Module):
    def __init__(s, kind):
        super().__init__(); s.kind = kind
        s.register_buffer("w", torch.randn(N, K) / K ** 0.5); s.register_buffer("b", torch.randn(N)); s.register_buffer("s", torch.rand(K) + 0.5)
    def forward(s, x, ts=None):
        a = {"scale": lambda: x * s.s, "float": lambda: x.float(), "tokscale": lambda: x * ts}[s.kind]()
        return torch.relu(F.linear(a, s.w, s.b))
nd = lambda dt: torch.randn(R, B, 2 * K).to(dt)[..., :K].transpose(0, 1)   # [64,2,1024] strides (2048, 131072, 1)
cases = {"scale f32 non-dense": ("scale", lambda: (nd(torch.float32),)),
         "float of bf16 non-dense": ("float", lambda: (nd(torch.bfloat16),)),
         "float of fp16 non-dense": ("float", lambda: (nd(torch.float16),)),
         "tokscale dense transposed x, ts [B,R,1]": ("tokscale", lambda: (torch.randn(R, B, K).transpose(0, 1), torch.rand(B, R, 1) + 0.5))}
for name, (kind, mk) in cases.items():
    m = M(kind)
    fm = fxfuse.rewrite(torch.export.export(m, mk()), only_profitable=False).module()
    args = mk()
    with torch.no_grad():
        want, got = m(*args), fm(*args)
    d = int((want != got).sum())
    print(f"{name:40s} equal={torch.equal(want, got)} differing={d}/{want.numel()} ({100*d/want.numel():.1f}%) maxabs={float((want-got).abs().max()):.3g}")
