import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, collections, torch.nn.functional as F
from harness import check
from models import *
B, R, K, N = 64, 2, 1024, 1024
results = []
class Two(torch.nn.Module):
    def __init__(s, kind, dtype=torch.float32):
        super().__init__(); s.kind = kind
        s.register_buffer("w1", (torch.randn(K, K) / K ** 0.5).to(dtype)); s.register_buffer("b1", torch.randn(K).to(dtype))
        s.register_buffer("w2", (torch.randn(N, K) / K ** 0.5).to(dtype)); s.register_buffer("b2", torch.randn(N).to(dtype))
        s.register_buffer("s", (torch.rand(K) + 0.5).to(dtype))
    def forward(s, x):
        h = torch.relu(F.linear(x, s.w1, s.b1))
        k = s.kind
        if k == "t01": h = h.transpose(0, 1)
        elif k == "perm": h = h.permute(1, 0, 2)
        elif k == "t01_scale": h = h.transpose(0, 1) * s.s
        elif k == "slice": h = h[::2]
        elif k == "t01_slice": h = h.transpose(0, 1)[:, :, : K // 2].contiguous() if False else h.transpose(0, 1)
        elif k == "t01_float": h = h.transpose(0, 1).float()
        elif k == "t01_bf16": h = h.transpose(0, 1).to(torch.bfloat16)
        return F.gelu(F.linear(h, s.w2.to(h.dtype), s.b2.to(h.dtype)))
for dt in [torch.float32]:
    for kind in ["t01", "perm", "t01_scale", "slice", "t01_float", "t01_bf16"]:
        for lay in ["contig", "t01"]:
            results.append(check(f"Two {kind} x={lay} {dt}", Two(kind, dt), lambda lay=lay, dt=dt: (mk_layout(lay, B, R, K, dt),)))
class InPerm(torch.nn.Module):
    def __init__(s, kind):
        super().__init__(); s.kind = kind
        s.register_buffer("w", (torch.randn(N, K) / K ** 0.5)); s.register_buffer("b", torch.randn(N)); s.register_buffer("s", torch.rand(K) + 0.5)
    def forward(s, x):
        k = s.kind
        if k == "perm4": x = x.permute(2, 1, 0, 3)
        elif k == "perm4_scale": x = x.permute(2, 1, 0, 3) * s.s
        elif k == "t01_float": x = x.transpose(0, 1).float()
        elif k == "scale_t01": x = (x * s.s).transpose(0, 1)
        elif k == "unsq_t": x = x.unsqueeze(0).transpose(0, 1)   # [R,B,K] -> [R,1,B,K]?? no: [1,R,B,K]->[R,1,B,K]
        return torch.relu(F.linear(x, s.w, s.b))
results.append(check("InPerm perm4", InPerm("perm4"), lambda: (torch.randn(R, 2, B // 2, K),)))
results.append(check("InPerm perm4_scale", InPerm("perm4_scale"), lambda: (torch.randn(R, 2, B // 2, K),)))
results.append(check("InPerm t01_float bf16", InPerm("t01_float"), lambda: (torch.randn(R, B, K).bfloat16(),)))
results.append(check("InPerm scale_t01", InPerm("scale_t01"), lambda: (torch.randn(R, B, K),)))
results.append(check("InPerm unsq_t", InPerm("unsq_t"), lambda: (torch.randn(R, B, K),)))
print(collections.Counter(r[0] for r in results))
