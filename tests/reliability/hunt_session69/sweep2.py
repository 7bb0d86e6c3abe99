import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, collections
from harness import check
from models import *
B, R, K, N = 64, 2, 1024, 128
results = []
layouts = ["contig", "t01", "t01_nd", "slice_batch", "slice_k", "expand", "p4", "t4_01", "p4_nd"]
for lay in layouts:
    for kind, xdt in [("scale", torch.float32), ("float", torch.bfloat16), ("float", torch.float16), ("to_bf16", torch.float32),
                      ("addc", torch.float32), ("relu", torch.float32), ("srow", torch.float32), ("scale_relu", torch.float32),
                      ("scale", torch.bfloat16), ("relu", torch.bfloat16)]:
        wdt = torch.bfloat16 if kind == "to_bf16" or xdt == torch.bfloat16 and kind != "float" else torch.float32
        mx = lambda lay=lay, dt=xdt: (mk_layout(lay, B, R, K, dt),)
        results.append(check(f"Prologue {kind} x={xdt} w={wdt} {lay}", Prologue(K, N, R, kind, wdt), mx, quiet=False))
    for sc in [False, True]:
        mx = lambda lay=lay: (mk_layout(lay, B, R, K, torch.float32).transpose(0, 1),)
        results.append(check(f"InnerT scale={sc} x.t01 of {lay}", InnerT(K, N, torch.float32, sc), mx))
    rshape = (B, R, N) if lay not in ("p4", "t4_01", "p4_nd") else tuple(mk_layout(lay, B, R, K, torch.float32).shape[:-1]) + (N,)
    results.append(check(f"Residual {lay}", Residual(K, N, torch.float32), lambda lay=lay: (mk_layout(lay, B, R, K, torch.float32), torch.randn(rshape))))
    results.append(check(f"Residual r.t01 {lay}", Residual(K, N, torch.float32), lambda lay=lay: (mk_layout(lay, B, R, K, torch.float32), torch.randn(rshape[1], rshape[0], *rshape[2:]).transpose(0, 1))))
print(collections.Counter(r[0] for r in results))
