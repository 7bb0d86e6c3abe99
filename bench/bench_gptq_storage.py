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
                                     [--forms zeros,sym]  (writes $OUT/bench_gptq_storage.json)
--forms: `zeros` the layer with its zero points (a zero point tensor on the gemv), `sym` GPTQ's symmetric form
(`w - 8`: a constant zero point, the words alone), `awq` AWQ's layer (tests/python/awq_linear.py: words packed along
n in AWQ's order, zero points per group; the gemv reads them, kernels/gemv.cuh FX_B_NWORDS; eager not timed: its calls could not be queued behind the GPU spin, session 67 on an H100, "host-bound"
also with the order index on the device and the group broadcast by expand; its int64 unpack is 8 bytes a weight
element), side by side in one process; each row names its form and the config the op's rule picks
(fxfuse._C.kernel_variant).
"""
import argparse
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from awq_linear import AWQLinear  # noqa: E402
from gptq_linear import GPTQLinear  # noqa: E402

import fxfuse  # noqa: E402
from bench_decode import ROTATION_BYTES, rotated_ms_each  # noqa: E402
from bench_chains import relerr  # noqa: E402
from bench_out import out_dir  # noqa: E402
from op_path import counters, path_of  # noqa: E402

GROUP = 128
STORAGE = ("qweight", "qzeros", "scales")


def config_of(spec, M, N, K):
    """The op's rule for this problem on sm_90, in words: the variant, and for the gemv its pipeline and CTAs per SM
    (from the generated source's defines)."""
    variant = fxfuse._C.kernel_variant(spec, M, N, K)[0]
    if variant != "gemv":
        return variant
    code = fxfuse._C.generate_cuda(spec, M, N, K)[1]
    defs = {}
    for name, value in re.findall(r"#define (FX_GEMV_\w+|FX_B_N?WORDS|FX_B_ZERO_TENSOR|FX_B_SCALE_IN_ELEM) (\d+)", code):
        defs.setdefault(name, value)  # the generator's, before the template's defaults
    words = "k" if defs.get("FX_B_WORDS") == "1" else "n" if defs.get("FX_B_NWORDS") == "1" else "none"  # packed along
    return (f"gemv mt{defs.get('FX_GEMV_MTILES')} s{defs.get('FX_GEMV_STAGES')} b{defs.get('FX_GEMV_MIN_BLOCKS')}"
            f" w{defs.get('FX_GEMV_WGMMA', '0')} words-{words} z{defs.get('FX_B_ZERO_TENSOR', '0')}"
            f" pairs{defs.get('FX_B_SCALE_IN_ELEM', '0')}")


def bench_row(M, K, N, with_compile, form="zeros"):
    torch.manual_seed(M * 7 + K * 3 + N)
    sym = form == "sym"

    def make():
        if form == "awq":
            return AWQLinear(K, N, GROUP, device="cuda")
        return GPTQLinear(K, N, GROUP, device="cuda", symmetric=sym)
    layer = make()
    x = torch.randn(M, K, device="cuda").half()
    per_set = sum(getattr(layer, b).nbytes for b in STORAGE)
    n = max(2, -(-ROTATION_BYTES // per_set))
    sets = []
    for i in range(n):
        copy = make() if i else layer
        w16 = (torch.randn(K, N, device="cuda") / K ** 0.5).half()
        sets.append((x, w16) + tuple(getattr(copy, b) for b in STORAGE))
    rewritten = fxfuse.rewrite(torch.export.export(layer, (x,)), only_profitable=False).module()
    nfused = sum(1 for nd in rewritten.graph.nodes if "gemm_chain" in str(nd.target))

    def on(module):
        def call(x, w16, qweight, qzeros, scales):
            module.qweight, module.qzeros, module.scales = qweight, qzeros, scales
            return module(x)
        return call

    fns = {"mm": lambda x, w16, *_: torch.mm(x, w16), "fxfuse": on(rewritten)}
    if form != "awq":
        fns["eager"] = on(layer)
    if with_compile:
        torch._dynamo.reset()
        fns["compile"] = on(torch.compile(layer, dynamic=False))
    ref = (x.double() @ layer.weight().double())
    specs = [nd.args[1] for nd in rewritten.graph.nodes if "gemm_chain" in str(nd.target)]
    row = dict(M=M, K=K, N=N, form=form, fused_chains=nfused, copies=n, config=config_of(specs[0], M, N, K) if specs else "")
    row["fxfuse_relerr"] = relerr(on(rewritten)(*sets[0]), ref)
    row["eager_relerr"] = relerr(on(layer)(*sets[0]), ref)
    before = counters()
    row.update(rotated_ms_each(fns, sets))
    row["path"] = path_of(before, counters())
    row["fxfuse_vs_mm"] = row["fxfuse"] / row["mm"]
    row["eager_vs_fxfuse"] = row["eager"] / row["fxfuse"] if "eager" in row else float("nan")
    row.setdefault("eager", float("nan"))
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", default="1,16,64,256")
    ap.add_argument("--kn", default="4096x4096,4096x14336,14336x4096")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--forms", default="zeros")
    a = ap.parse_args()
    rows = []
    for kn in a.kn.split(","):
        K, N = map(int, kn.split("x"))
        for M in map(int, a.m.split(",")):
            for form in a.forms.split(","):
                rows.append(bench_row(M, K, N, a.compile, form))
    with open(os.path.join(out_dir(), "bench_gptq_storage.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"  {'M':>4} {'K':>6} {'N':>6} {'form':>5} {'mm ms':>8} {'eager':>8} {'fxfuse':>8} {'fx/mm':>6} "
          f"{'eager/fx':>8}{' compile':>8}  path  relerr(fx, eager)")
    for r in rows:
        comp = f"{r['compile']:8.4f}" if "compile" in r else " " * 8
        print(f"  {r['M']:>4} {r['K']:>6} {r['N']:>6} {r['form']:>5} {r['mm']:8.4f} {r['eager']:8.4f} {r['fxfuse']:8.4f} "
              f"{r['fxfuse_vs_mm']:6.2f} {r['eager_vs_fxfuse']:8.2f}{comp}  {r['path']}  "
              f"{r['fxfuse_relerr']:.1e} {r['eager_relerr']:.1e}  {r['config']}")


if __name__ == "__main__":
    main()
