# torch.export's training IR keeps w.unflatten(1, (K//G, G)) ... .flatten(1) as aten.unflatten.int / aten.flatten.using_ints:
# the group-wise region is not folded (B read as the computed [N, K] weight) and the report names no stop reason.
# The same silence for a region merged back by two views ([N*K/G, G] then [N, K]). Answers are right.
import torch, fxfuse, torch.nn.functional as F
bf, N, K, G = torch.bfloat16, 40, 128, 32
class M(torch.nn.Module):
    def __init__(s, spelling):
        super().__init__(); s.spelling = spelling
        s.register_buffer('w', torch.randint(-128, 128, (N, K), dtype=torch.int8))
        s.register_buffer('s', (torch.rand(N, K // G) * 0.02 + 0.001).to(bf))
    def forward(s, x):
        if s.spelling == "unflatten":
            W = (s.w.unflatten(1, (K // G, G)).to(bf) * s.s.unsqueeze(2)).flatten(1)
        else:
            W = (s.w.view(N, K // G, G).to(bf) * s.s[:, :, None]).view(N * K // G, G).view(N, K)
        return torch.relu(F.linear(x, W))
for sp in ("unflatten", "two views"):
    x = torch.randn(6, K).to(bf)
    ep = torch.export.export(M(sp), (x,))
    print(sp, "|", str(fxfuse.report(ep, only_profitable=False)).splitlines()[1])
    print("   after run_decompositions |", str(fxfuse.report(ep.run_decompositions(), only_profitable=False)).splitlines()[1])
