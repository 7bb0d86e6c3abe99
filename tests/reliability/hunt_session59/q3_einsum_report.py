# Finding 3: an exported program that is not decomposed keeps aten.einsum (MoE experts' GEMM);
# fxfuse.report says "(no GEMM in this graph)" instead of naming it (it fuses after run_decompositions()).
import sys; sys.path.insert(0, "python")
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse
E, N, K = 3, 96, 128
class MoE(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.register_buffer("w", torch.randint(-128, 128, (E, N, K), dtype=torch.int8))
        s.register_buffer("s", torch.rand(E, N).bfloat16() * 0.02)
    def forward(s, x):
        return torch.einsum("ebk,enk->ebn", x, s.w.to(x.dtype) * s.s[:, :, None])
x = torch.randn(E, 8, K).bfloat16()
ep = torch.export.export(MoE(), (x,))
print(fxfuse.report(ep, only_profitable=False))
print(fxfuse.report(ep.run_decompositions(), only_profitable=False))
