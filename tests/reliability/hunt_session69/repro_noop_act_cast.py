"""x.float() on an f32 activation that is transposed and non-dense: eager's .float() returns x itself, whose leading
dims can't be viewed as one -> bmm. The chain has a same-dtype convert prologue; unfoldedEagerA treats it as computed
over a non-dense activation -> one mm."""
import torch, torch.nn.functional as F, fxfuse
torch.manual_seed(0)
B, R, K, N = 64, 2, 1024, 128
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.register_buffer("w", torch.randn(N, K) / K ** 0.5); s.register_buffer("b", torch.randn(N))
    def forward(s, x): return torch.relu(F.linear(x.float(), s.w, s.b))
m = M()
mk = lambda: torch.randn(R, B, 2 * K)[..., :K].transpose(0, 1)  # [64, 2, 1024] non-dense, not foldable
ep = fxfuse.rewrite(torch.export.export(m, (mk(),)), only_profitable=False)
print([str(n.target) for n in ep.graph.nodes if n.op == "call_function"])
fm = ep.module()
for mode in (torch.no_grad, torch.inference_mode):
    x = mk()
    with mode():
        want, got = m(x), fm(x)
    d = int((want != got).sum())
    print(f"{mode.__name__:15s} equal={torch.equal(want, got)} differing={d}/{want.numel()} ({100*d/want.numel():.1f}%) maxabs={float((want-got).abs().max()):.3g}")
