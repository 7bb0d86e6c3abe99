"""GPTQ's own int32 storage (docs/quantized_storage/README.md): a GPTQ linear layer (tests/python/gptq_linear.py, the
torch dequantization GPTQ's torch kernel runs) rewritten by `fxfuse.rewrite` of its ExportedProgram, against eager
and cuBLAS mm on 16-bit weights of the same shape, in one process.

Per M, K, N (f16, G = 128, no act-order):
  mm       cuBLAS `torch.mm(x, w)` on an f16 [K, N] weight (the floor a dequantizing kernel is measured against)
  eager    the layer as written (unpack, gather the scales and zero points, dequantize, matmul)
  compile  torch.compile of the layer (with --compile)
  fxfuse   the rewritten program's module: the chain reads the weight's int32 words ('p' dim, i32), the zero
           points' words ('q', eight along n) and g_idx's groups: the whole layer is one op. Under
           FXFUSE_GEMV_ZERO_TENSOR=1 the gemv reads the words at 1-64 rows (session 65, kernels/gemv.cuh FX_B_WORDS)
           and the default rewrite fuses it; without the knob the generic kernel runs it and the default rewrite
           leaves it unfused (not_profitable), so the rewrite here is forced (only_profitable=False)
and the ratios fxfuse / mm and eager / fxfuse, the op's path (bench/op_path.py) and the error against float64.
Timing: bench_decode.rotated_ms_each (device time, batches behind a GPU spin, variants interleaved); every call
rotates over copies of qweight / qzeros / scales and of mm's weight (>= 256 MB each), set on the module before it
runs, so each call reads its weights from HBM.

  python bench/bench_gptq_storage.py [--m 1,16,64,256] [--kn 4096x4096,4096x14336,14336x4096] [--compile]
                                     (writes $OUT/bench_gptq_storage.json)
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from gptq_linear import GPTQLinear  # noqa: E402

import fxfuse  # noqa: E402
from bench_decode import ROTATION_BYTES, rotated_ms_each  # noqa: E402
from bench_chains import relerr  # noqa: E402
from bench_out import out_dir  # noqa: E402
from op_path import counters, path_of  # noqa: E402

GROUP = 128
STORAGE = ("qweight", "qzeros", "scales")


def bench_row(M, K, N, with_compile):
    torch.manual_seed(M * 7 + K * 3 + N)
    layer = GPTQLinear(K, N, GROUP, device="cuda")
    x = torch.randn(M, K, device="cuda").half()
    per_set = sum(getattr(layer, b).nbytes for b in STORAGE)
    n = max(2, -(-ROTATION_BYTES // per_set))
    sets = []
    for i in range(n):
        copy = GPTQLinear(K, N, GROUP, device="cuda") if i else layer
        w16 = (torch.randn(K, N, device="cuda") / K ** 0.5).half()
        sets.append((x, w16) + tuple(getattr(copy, b) for b in STORAGE))
    rewritten = fxfuse.rewrite(torch.export.export(layer, (x,)), only_profitable=False).module()
    nfused = sum(1 for nd in rewritten.graph.nodes if "gemm_chain" in str(nd.target))

    def on(module):
        def call(x, w16, qweight, qzeros, scales):
            module.qweight, module.qzeros, module.scales = qweight, qzeros, scales
            return module(x)
        return call

    fns = {"mm": lambda x, w16, *_: torch.mm(x, w16), "eager": on(layer), "fxfuse": on(rewritten)}
    if with_compile:
        torch._dynamo.reset()
        fns["compile"] = on(torch.compile(layer, dynamic=False))
    ref = (x.double() @ layer.weight().double())
    row = dict(M=M, K=K, N=N, fused_chains=nfused, copies=n)
    row["fxfuse_relerr"] = relerr(on(rewritten)(*sets[0]), ref)
    row["eager_relerr"] = relerr(on(layer)(*sets[0]), ref)
    before = counters()
    row.update(rotated_ms_each(fns, sets))
    row["path"] = path_of(before, counters())
    row["fxfuse_vs_mm"] = row["fxfuse"] / row["mm"]
    row["eager_vs_fxfuse"] = row["eager"] / row["fxfuse"]
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", default="1,16,64,256")
    ap.add_argument("--kn", default="4096x4096,4096x14336,14336x4096")
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    rows = []
    for kn in a.kn.split(","):
        K, N = map(int, kn.split("x"))
        for M in map(int, a.m.split(",")):
            rows.append(bench_row(M, K, N, a.compile))
    with open(os.path.join(out_dir(), "bench_gptq_storage.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"  {'M':>4} {'K':>6} {'N':>6} {'mm ms':>8} {'eager':>8} {'fxfuse':>8} {'fx/mm':>6} {'eager/fx':>8}"
          f"{' compile':>8}  path  relerr(fx, eager)")
    for r in rows:
        comp = f"{r['compile']:8.4f}" if "compile" in r else " " * 8
        print(f"  {r['M']:>4} {r['K']:>6} {r['N']:>6} {r['mm']:8.4f} {r['eager']:8.4f} {r['fxfuse']:8.4f} "
              f"{r['fxfuse_vs_mm']:6.2f} {r['eager_vs_fxfuse']:8.2f}{comp}  {r['path']}  "
              f"{r['fxfuse_relerr']:.1e} {r['eager_relerr']:.1e}")


if __name__ == "__main__":
    main()
