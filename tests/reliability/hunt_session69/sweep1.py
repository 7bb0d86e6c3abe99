import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from harness import check
from models import *
B, R, K, N = 64, 2, 1024, 128
results = []
layouts = ["contig", "t01", "t01_nd", "slice_rows", "slice_batch", "slice_k", "expand", "p4", "t4_01", "t4_12", "c4", "p4_nd"]
for dt in [torch.float32, torch.bfloat16]:
    for lay in layouts:
        mx = lambda lay=lay, dt=dt: (mk_layout(lay, B, R, K, dt),)
        tag = f"{dt} {lay}"
        for rg in [True, False]:
            m = Linear(K, N, dt); m.requires_grad_(rg)
            results.append(check(f"Linear rg={rg} {tag}", m, mx, modes=("no_grad", "enable_grad", "inference")))
        for sp in [False, True]:
            results.append(check(f"Dequant scale_param={sp} {tag}", Dequant(K, N, dt, sp), mx, modes=("no_grad", "enable_grad", "inference")))
        for p in [False, True]:
            results.append(check(f"Matmul param={p} {tag}", Matmul(K, N, dt, p), mx, modes=("no_grad", "enable_grad", "inference")))
        results.append(check(f"NoBias {tag}", NoBias(K, N, dt), mx))
        results.append(check(f"Residual {tag}", Residual(K, N, dt), lambda lay=lay, dt=dt: (mk_layout(lay, B, R, K, dt), torch.randn(B, R, N).to(dt) if lay in ("contig","t01","t01_nd","slice_rows","slice_batch","slice_k","expand") else torch.randn(B//2, 2, R, N).to(dt))))
import collections; print(collections.Counter(r[0] for r in results))
