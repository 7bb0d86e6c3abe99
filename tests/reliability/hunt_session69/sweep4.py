import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, collections
from harness import check
from models import *
results = []
configs = [(64, 1, 512, 16), (32, 3, 2048, 8), (16, 4, 4096, 64), (8, 8, 1024, 1024), (4, 32, 512, 256), (64, 2, 4096, 1), (16, 2, 2048, 2048)]
for (B, R, K, N) in configs:
    for dt in [torch.float32, torch.bfloat16, torch.float16]:
        for lay in ["t01", "p4", "t01_nd", "slice_batch"]:
            mx = lambda lay=lay, dt=dt, B=B, R=R, K=K: (mk_layout(lay, B, R, K, dt),)
            tag = f"B={B} R={R} K={K} N={N} {dt} {lay}"
            for rg in [True, False]:
                m = Linear(K, N, dt, act="gelu"); m.requires_grad_(rg)
                results.append(check(f"Linear+gelu rg={rg} {tag}", m, mx, modes=("no_grad", "inference"), ntries=1, quiet=True))
            results.append(check(f"Dequant sp=True {tag}", Dequant(K, N, dt, True), mx, modes=("no_grad", "enable_grad"), ntries=1, quiet=True))
            results.append(check(f"Matmul buffer {tag}", Matmul(K, N, dt), mx, ntries=1, quiet=True))
            results.append(check(f"NoBias {tag}", NoBias(K, N, dt), mx, ntries=1, quiet=True))
            if dt == torch.float32 and lay != "t01_nd":
                results.append(check(f"Prologue scale {tag}", Prologue(K, N, R, "scale"), mx, ntries=1, quiet=True))
            if dt != torch.float32 and lay != "t01_nd":
                results.append(check(f"Prologue float {tag}", Prologue(K, N, R, "float"), mx, ntries=1, quiet=True))
        print("done", B, R, K, N, collections.Counter(r[0] for r in results), flush=True)
print(collections.Counter(r[0] for r in results))
