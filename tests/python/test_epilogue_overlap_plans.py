"""The overlapped epilogue (FXFUSE_SM90_EPILOGUE_OVERLAP=1, kernels/sm90_wgmma_gemm.cuh FX_EPI_OVERLAP) from
real graphs, without a GPU: the pass's specs of `x @ w + b` (the product 16-bit) and of F.linear with a bias
(addmm: the product f32, the bias added before the one rounding) both have a 16-bit hand-off, so the planner's
128x256 cooperative tile at 4096^3 takes the overlapped epilogue; two outputs keep the plain tile (with
FXFUSE_SM90_ALL_EPILOGUES=1, so that the Hopper kernel takes that chain at all). The knobs are read once per
process: a child traces, rewrites and plans."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import fxfuse._C as C

CHILD = r"""
import torch, torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
import fxfuse._C as C
from fxfuse.pass_driver import Options, run_on_graph

def plans(fn, *shapes):
    with FakeTensorMode():
        args = [torch.empty(*s, device="cuda", dtype=torch.bfloat16) for s in shapes]
    gm = make_fx(fn, tracing_mode="fake")(*args)
    run_on_graph(gm.graph, Options(precompile=False, arch="sm_90"), "overlap")
    specs = [a for n in gm.graph.nodes if "gemm_chain" in str(n.target) for a in n.args if isinstance(a, str)]
    return [C.kernel_candidates_for_size(s, 4096, 4096, 4096)[0] for s in specs]

gelu = lambda y: F.gelu(y, approximate="tanh")
out = {
    "mm_bias_gelu": plans(lambda x, w, b: gelu(torch.mm(x, w) + b), (4096, 4096), (4096, 4096), (4096,)),
    "linear_bias_gelu": plans(lambda x, w, b: gelu(F.linear(x, w, b)), (4096, 4096), (4096, 4096), (4096,)),
    "two_outputs": plans(lambda x, w, b: (lambda y: (y, gelu(y)))(torch.mm(x, w) + b),
                         (4096, 4096), (4096, 4096), (4096,)),
}
print(repr(out))
"""


def test_real_graphs_plan_the_overlapped_epilogue_where_they_have_a_handoff():
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXFUSE_SM90_")}
    env["FXFUSE_SM90_EPILOGUE_OVERLAP"] = "1"
    env["FXFUSE_SM90_ALL_EPILOGUES"] = "1"  # the two-output chain on the Hopper kernel too (its rule refuses it)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(C.__file__))),
                                         env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = ast.literal_eval(r.stdout.strip().splitlines()[-1])
    assert got["mm_bias_gelu"] == ["sm90_wgmma 128x256x64 s3 t384 epioverlap"], got
    assert got["linear_bias_gelu"] == ["sm90_wgmma 128x256x64 s3 t384 epioverlap"], got
    # two outputs (the product plus its GELU) have no single 16-bit output to hand over: the plain tile
    assert got["two_outputs"] == ["sm90_wgmma 128x256x64 s4 t384"], got
