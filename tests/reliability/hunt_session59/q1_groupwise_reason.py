# Finding 1: a weight-dequant prologue the pass cannot take is reported as
# "no_epilogue_no_prologue (a bare GEMM: cuBLAS is as good)". Answers are right (not fused).
import os, sys; sys.path.insert(0, "python")
import warnings; warnings.filterwarnings("ignore")
import torch, torch.nn.functional as F, fxfuse
torch.manual_seed(0)
N, K, g, dt = 96, 128, 32, torch.bfloat16
class GroupWise(torch.nn.Module):          # GPTQ/AWQ-style group-wise int8/int4 dequant
    def __init__(s):
        super().__init__()
        s.register_buffer("w", torch.randint(-128, 128, (N, K), dtype=torch.int8))
        s.register_buffer("s", torch.rand(N, K // g).to(dt) * 0.02)
    def forward(s, x):
        return F.linear(x, (s.w.view(N, K // g, g).to(x.dtype) * s.s[:, :, None]).view(N, K))
class IntZeroPoint(torch.nn.Module):       # integer zero point subtracted before the convert
    def __init__(s):
        super().__init__()
        s.register_buffer("w", torch.randint(-128, 128, (N, K), dtype=torch.int8))
        s.register_buffer("zp", torch.randint(-128, 128, (N, 1), dtype=torch.int8))
        s.register_buffer("s", torch.rand(N).to(dt) * 0.02)
    def forward(s, x):
        return F.linear(x, (s.w.to(torch.int16) - s.zp) * s.s[:, None])
class InplaceDequant(torch.nn.Module):     # in-place dequant, export without decompositions
    def __init__(s):
        super().__init__()
        s.register_buffer("w", torch.randint(-128, 128, (N, K), dtype=torch.int8))
        s.register_buffer("s", torch.rand(N).to(dt) * 0.02)
    def forward(s, x):
        wd = s.w.to(x.dtype); wd.mul_(s.s[:, None]); return F.linear(x, wd)
class QKVSplit(torch.nn.Module):           # fused QKV weight dequantized once, then split
    def __init__(s):
        super().__init__()
        s.register_buffer("w", torch.randint(-128, 128, (128, K), dtype=torch.int8))
        s.register_buffer("s", torch.rand(128).to(dt) * 0.02)
    def forward(s, x):
        q, k, v = (s.w.to(x.dtype) * s.s[:, None]).split([64, 32, 32], 0)
        return F.linear(x, q), F.linear(x, k), F.linear(x, v)
x = torch.randn(24, K).to(dt)
for m in (GroupWise(), IntZeroPoint(), InplaceDequant(), QKVSplit()):
    print(type(m).__name__)
    print(fxfuse.report(torch.export.export(m, (x,)), only_profitable=False))
