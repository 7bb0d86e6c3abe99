"""F.linear(x, w.float()) with w an f32 nn.Parameter: eager's .float() returns w itself (requires_grad True, also
under no_grad / inference_mode) so eager's matmul folds the rows into one mm; the chain spec has `convert %1 : f32`
(a computed weight), so weightRequiresGrad() says False under no_grad and the reference runs bmm."""
import torch, torch.nn.functional as F, fxfuse
torch.manual_seed(0)
B, R, K, N = 64, 2, 1024, 128
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.w = torch.nn.Parameter(torch.randn(N, K) / K ** 0.5); s.register_buffer("b", torch.randn(N))
    def forward(s, x): return torch.relu(F.linear(x, s.w.float()) + s.b)
m = M()
mk = lambda: torch.randn(R, B, K).transpose(0, 1)  # [64, 2, 1024], leading dims not viewable as one
ep = fxfuse.rewrite(torch.export.export(m, (mk(),)), only_profitable=False)
fm = ep.module()
for mode in (torch.no_grad, torch.inference_mode, torch.enable_grad):
    x = mk()
    with mode():
        want, got = m(x).detach(), fm(x).detach()
    d = int((want != got).sum())
    print(f"{mode.__name__:15s} equal={torch.equal(want, got)} differing={d}/{want.numel()} ({100*d/want.numel():.1f}%) maxabs={float((want-got).abs().max()):.3g}")
