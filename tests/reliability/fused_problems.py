"""The fused chains the pass makes of a generated differential case, on the CPU: the case is
traced on fake CUDA tensors and fused as the GPU differential does (only_profitable=False, no
precompile). Shared by the CPU-side tools that ask what the GPU run reaches
(estimate_kernel_coverage.py) or whether its kernels compile (compile_random_hopper_specs.py)."""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from fxfuse.pass_driver import Options, problem_shape, run_on_graph


def fused_problems(case, arch: str = "sm_90", tag: str = "cpu-tool") -> list[tuple[str, int, int, int, int]]:
    """(spec, M, N, K, batch) of every op call with a problem shape in ``case``'s fused graph.
    Raises what tracing or the pass raises."""
    cpu = case.make_inputs("cpu")
    with FakeTensorMode():
        fake = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cuda") for t in cpu]
    gm = make_fx(case.build(), tracing_mode="fake")(*fake)
    run_on_graph(gm.graph, Options(only_profitable=False, precompile=False, arch=arch), tag)
    out = []
    for node in gm.graph.nodes:
        if "gemm_chain" in str(node.target) and (shape := problem_shape(node)) is not None:
            m, n, k, b = shape
            out.append((node.args[1], m, n, k, b))
    return out
