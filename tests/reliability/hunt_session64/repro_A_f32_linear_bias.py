"""fxfuse CPU result differs from eager (1 ulp) for an f32 F.linear(x, W.t(), b) / torch.addmm(b, x, W) whose weight W
is computed [K, N]-contiguous by a prologue (GPTQ's natural dequantized layout, f32 scales). f16/bf16 and the
`x @ W + b` form are bit-exact."""
import sys
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "..", "..", "python"))
import torch, torch.nn.functional as F
import fxfuse
from gptq_linear import GPTQLinear

class GPTQF32Linear(GPTQLinear):
    def forward(self, x):
        return F.linear(x, self.weight().to(x.dtype).t(), self.bias)

class KN(torch.nn.Module):  # no GPTQ at all: an f32 weight stored [K, N] times a scale, then F.linear with a bias
    def __init__(self, K, N):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(K, N)); self.s = torch.nn.Parameter(torch.rand(1, N))
        self.b = torch.nn.Parameter(torch.randn(N))
    def forward(self, x):
        return F.linear(x, (self.w * self.s).t(), self.b)

torch.manual_seed(0)
for name, model, K, M in [("GPTQ f32 F.linear+bias", GPTQF32Linear(64, 64, 16, dtype=torch.float32, bias=True), 64, 1),
                          ("GPTQ f32 F.linear+bias", GPTQF32Linear(512, 40, 128, dtype=torch.float32, bias=True), 512, 6),
                          ("plain f32 (w*s).t() linear", KN(64, 64), 64, 1)]:
    x = torch.randn(M, K)
    mod = fxfuse.rewrite(torch.export.export(model, (x,))).module()
    x = torch.randn(M, K)
    got, want = mod(x), model(x)
    print(f"{name}: torch.equal={torch.equal(got, want)} max|diff|={(got - want).abs().max().item():.3g}")
# the cause, in torch alone: eager's f32 addmm with an N-major B is not mm + add
W, b, x = torch.randn(64, 64), torch.randn(64), torch.randn(1, 64)
print("torch: addmm(b, x, W) == x @ W + b :", torch.equal(torch.addmm(b, x, W), x @ W + b))
