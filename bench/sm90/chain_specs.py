"""The chains of bench/bench_chains.py as the op's specs (docs/spec.md), shared by the SASS
statistics, the tile comparison and the spill report's spec files: each chain of bench/chain_fns.py
captured on small bf16 CPU tensors (make_fx), handed to the pass as a CUDA graph (the device
decides the activation fold) with every chain fused, and the spec of its one rewrite taken. So
these are the kernels the benchmark runs (`mm : bf16` where eager rounds the product; the
residual chain's `* 0.5`). Until session 11 this file held hand-written specs with `mm : f32`
(the `torch.addmm(b, x, w)` form, one rounding fewer per element) and no `* 0.5`
(bench/sm90/NOTES.md session 11)."""
import functools
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from chain_fns import CHAINS as CHAIN_FNS  # noqa: E402

EPILOGUE_CHAINS = ("bias_gelu", "silu", "bias_relu_cast", "bias_gelu_resid")


def spec_of(fn) -> str:
    """The spec the pass writes for `fn`'s one GEMM chain in a CUDA graph."""
    import fxfuse._C as C
    from fxfuse.ir_export import graph_to_ir
    from fxfuse.pass_driver import Options
    from torch.fx.experimental.proxy_tensor import make_fx

    n = 64
    x, w, b, r = (torch.randn(n, n, dtype=torch.bfloat16), torch.randn(n, n, dtype=torch.bfloat16),
                  torch.randn(n, dtype=torch.bfloat16), torch.randn(n, n, dtype=torch.bfloat16))
    wq, s = torch.zeros(n, n, dtype=torch.int8), torch.ones(n, dtype=torch.bfloat16)
    ir = graph_to_ir(make_fx(fn)(x, w, b, r, wq, s, w.t().contiguous()).graph).replace("@cpu", "@cuda:0")
    options = json.loads(Options(only_profitable=False).pass_options_json())
    options["nvrtc"] = True  # as on the GPU machine (without libnvrtc every CUDA chain is rejected)
    rewrites = json.loads(C.run_pass(ir, json.dumps(options)))["rewrites"]
    if len(rewrites) != 1:
        raise RuntimeError(f"expected one fused chain, the pass wrote {len(rewrites)}")
    return rewrites[0]["spec"]


@functools.lru_cache(maxsize=None)
def chains() -> dict:
    """Each epilogue chain's spec, by name. A function, not a module constant: a pass failure
    then surfaces as an error where the specs are used, not while importing."""
    return {name: spec_of(CHAIN_FNS[name]) for name in EPILOGUE_CHAINS}
