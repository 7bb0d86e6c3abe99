"""A decode gemv timed after an RMS norm, as a model runs it: the programmatic launch's gain where the
kernel before the gemv is not a gemv (bench/RESULTS.md Run BB timed gemv after gemv only).

Per shape, one process times, with bench_decode's interleaved, weight-rotating timer:
  norm            the norm alone (pow, mean, rsqrt, mul: ATen kernels)
  norm+mm         the norm, then cuBLAS mm alone
  norm+eager      the norm, then eager's x @ w + b
  norm+fxfuse     the norm, then the pass's rewrite of x @ w + b (the gemv at M <= 16)
Run it twice, with FXFUSE_PDL=0 and without (read when the call site is planned, once per
process), and compare norm+fxfuse; `fxfuse - norm` is the gemv's share.

    PYTHONPATH=python:bench python3 bench/gemv/after_norm.py [--m 1,16] [--kn 4096x14336,...] [--json F]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_chains import fused_module  # noqa: E402
from bench_decode import rotated_ms_each, rotation  # noqa: E402


def rms_norm(x):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)


def row(M, K, N, dt):
    g = torch.Generator(device="cuda").manual_seed(M * 7 + K * 3 + N)
    x = torch.randn(M, K, device="cuda", dtype=dt, generator=g)
    w = torch.randn(K, N, device="cuda", dtype=dt, generator=g) / K ** 0.5
    b = torch.randn(N, device="cuda", dtype=dt, generator=g)
    sets = rotation((x, w, b), w.nbytes, weight_args=(1,))  # each call reads its weight from HBM
    gm, nfused, _ = fused_module(lambda x, w, b: x @ w + b, (x, w, b))
    fns = {
        "norm": lambda x, w, b: rms_norm(x),
        "norm+mm": lambda x, w, b: torch.mm(rms_norm(x), w),
        "norm+eager": lambda x, w, b: rms_norm(x) @ w + b,
        "norm+fxfuse": lambda x, w, b: gm(rms_norm(x), w, b),
    }
    out = fns["norm+fxfuse"](x, w, b)
    out = out[0] if isinstance(out, (list, tuple)) else out
    ref = fns["norm+eager"](x.double(), w.double(), b.double())
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert nfused == 1 and err < 1e-2, (nfused, err)
    ms = rotated_ms_each(fns, sets)
    return dict(M=M, K=K, N=N, dtype=str(dt).split(".")[-1], relerr=err,
                pdl=os.environ.get("FXFUSE_PDL", "") != "0", **ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", default="1,16")
    ap.add_argument("--kn", default="4096x14336,14336x4096,4096x4096")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    rows = []
    for kn in a.kn.split(","):
        K, N = (int(v) for v in kn.split("x"))
        for M in (int(v) for v in a.m.split(",")):
            rows.append(row(M, K, N, torch.bfloat16))
    print(f"FXFUSE_PDL={os.environ.get('FXFUSE_PDL', '(unset: on)')}; ms per call, back to back")
    print(f"{'M':>3} {'K x N':>11} {'norm':>8} {'norm+mm':>8} {'norm+eager':>10} {'norm+fxfuse':>11}  fxfuse-norm")
    for r in rows:
        print(f"{r['M']:>3} {r['K']:>5}x{r['N']:<5} {r['norm']:8.4f} {r['norm+mm']:8.4f} {r['norm+eager']:10.4f} "
              f"{r['norm+fxfuse']:11.4f}  {r['norm+fxfuse'] - r['norm']:.4f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
