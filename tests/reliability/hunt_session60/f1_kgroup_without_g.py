# A group-wise region whose operands have no 'g' dim (a per-channel scale [N,1,1], or a convert alone):
# the chain is dropped as internal_error "kgroup is given but no input has a 'g' dim".
import torch, fxfuse, torch.nn.functional as F
bf, N, K, G = torch.bfloat16, 40, 128, 32
class PerChannel(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.register_buffer('w', torch.randint(-128, 128, (N, K), dtype=torch.int8))
        s.register_buffer('c', torch.rand(N).to(bf) * 0.01 + 0.001)
    def forward(s, x): return torch.relu(F.linear(x, (s.w.view(N, K // G, G).to(bf) * s.c[:, None, None]).view(N, K)))
class ConvertOnly(PerChannel):
    def forward(s, x): return torch.relu(F.linear(x, s.w.view(N, K // G, G).to(bf).view(N, K)))
class Scalar(PerChannel):
    def forward(s, x): return torch.relu(F.linear(x, (s.w.view(N, K // G, G).to(bf) * 0.01).view(N, K)))
for m in (PerChannel(), ConvertOnly(), Scalar()):
    x = torch.randn(6, K).to(bf)
    ep = torch.export.export(m, (x,))
    print(type(m).__name__, fxfuse.report(ep, only_profitable=False))
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    print(" chains:", sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep2.graph.nodes),
          "equal:", torch.equal(ep2.module()(x), m(x)))
