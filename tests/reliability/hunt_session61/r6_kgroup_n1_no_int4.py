"""Pre-existing, NOT int4: N=1 linear, bf16 weight (plain buffer) with a group-wise scale (G=2). For this saved input
(r7_case.pt, found by the int4 fuzzer, z_fuzz.py seed 12) the rewritten program's answer differs from eager's by
one bf16 ulp: the CPU reference hands mm its dequantized B as [K,1] with strides (1,1) (the 'g' scale expanded by
repeat_interleave makes the mul's output contiguous), eager's F.linear multiplies by W.t() (strides (1,K)); for
N=1 ATen picks another kernel/summation order."""
from common import *
bf = torch.bfloat16
N, K, G = 1, 128, 2
d = torch.load(__import__("os").path.join(__import__("os").path.dirname(__file__), "r7_case.pt"))
W0 = torch.stack([d["w"] & 15, d["w"] >> 4], -1).view(N, K).to(bf)   # plain bf16 values, unpacked here in eager
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("W0", W0.clone()); self.register_buffer("s", d["s"].clone())
    def forward(self, x):
        return F.linear(x, (self.W0.view(N, K // G, G) * self.s[:, :, None]).view(N, K))
m = M()
x = d["x"]
ep2 = fxfuse.rewrite(torch.export.export(m, (x,)), only_profitable=False)
print(specs(ep2)[0])
got, want = ep2.module()(x), m(x)
W = (m.W0.view(N, K // G, G) * m.s[:, :, None]).view(N, K)
print("fused == eager:", torch.equal(got, want), "maxdiff", maxdiff(got, want))
print("eager == x @ W.t()  [B strides (1,K)]:", torch.equal(want, x @ W.t()))
print("fused == x @ W.reshape(K, 1)  [B strides (1,1)]:", torch.equal(got, x @ W.reshape(K, 1)))
