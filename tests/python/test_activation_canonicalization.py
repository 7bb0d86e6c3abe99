"""Decomposed SiLU/GELU in torch.compile's real post-grad graphs become the composite spec ops
(pass/activation_canonicalization.cpp): the graphs Inductor hands the pass really are
decomposed, the pass's spec names ``silu`` / ``gelu_tanh`` / ``gelu`` and none of the
decomposition's ops, and the rewritten graph, run by the CPU reference kernel through
``backend="fxfuse"``, gives eager's answers on fresh inputs. The fold is for CUDA graphs only
(activation_canonicalization.h: ATen's CPU ops differ from their own decompositions): these CPU
captures are handed to the pass as CUDA graphs for the fold, and as they are for the CPU, where
the chain fuses as written."""
from __future__ import annotations

import json
import re

import pytest
import torch
import torch.nn.functional as F

import fxfuse
from fxfuse.ir_export import graph_to_ir
from fxfuse.pass_driver import Options
from fxfuse.stats import recent_plans
from helpers import rel_err

pytestmark = pytest.mark.needs_real_pass

TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2}  # test_backend.py / test_gpu.py

# activation -> (fn, the composite spec op, an aten op its decomposition must contain)
ACTS = {
    "silu": (lambda x, w, b: F.silu(F.linear(x, w, b)), "silu", "aten.exp.default"),
    "gelu_tanh": (lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), "gelu_tanh", "aten.tanh.default"),
    "gelu": (lambda x, w, b: F.gelu(F.linear(x, w, b)), "gelu", "aten.erf.default"),
}
# op lines of the decompositions: none may be left in the spec
DECOMPOSED_OPS = ("neg", "exp", "div", "tanh", "erf", "sigmoid", "mul", "convert")
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}


def _args(dtype):
    # fresh each call (the conftest fixture seeds once per test): non-zero, both signs
    x = torch.randn(16, 64).to(dtype)
    w = (torch.randn(96, 64) / 8).to(dtype)
    b = torch.randn(96).to(dtype)
    return x, w, b


def _capture_post_grad(fn, *args):
    """IR text of the post-grad graph(s) Inductor hands to the custom pass."""
    import torch._inductor.config as cfg

    graphs = []
    with cfg.patch(post_grad_custom_post_pass=lambda g: graphs.append(graph_to_ir(g)), fx_graph_cache=False):
        torch._dynamo.reset()
        torch.compile(fn)(*args)
    return graphs


def _spec_ops(spec: str) -> list[str]:
    """The op of every `%i = <op> …` line (inputs and consts left out)."""
    ops = []
    for line in spec.splitlines():
        m = re.match(r"%\d+ = (\w+) ", line)
        if m and m.group(1) not in ("input", "const"):
            ops.append(m.group(1))
    return ops


def _cuda_plan(ir: str) -> dict:
    """The pass's plan for a captured CPU graph handed over as a CUDA graph (where the fold
    applies), every chain fused (an f32 one would run as the simt kernel, not profitable)."""
    options = json.loads(Options(only_profitable=False).pass_options_json())
    options["nvrtc"] = True  # as on a GPU machine: without libnvrtc here every CUDA chain is rejected
    return json.loads(fxfuse._C.run_pass(ir.replace("@cpu", "@cuda:0"), json.dumps(options)))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("act", ACTS)
def test_post_grad_graph_spec_has_the_composite_op(act, dt):
    fn, op, decomposed = ACTS[act]
    dtype = DTYPES[dt]
    (ir,) = _capture_post_grad(fn, *_args(dtype))
    # what makes this test mean something: Inductor really hands the pass the decomposition
    assert decomposed in ir and f"aten.{act}" not in ir and "aten.gelu" not in ir, ir
    assert "@cpu" in ir, ir
    on_cpu = json.loads(fxfuse._C.run_pass(ir, Options().pass_options_json()))
    (cpu_rewrite,) = on_cpu["rewrites"]
    assert op not in _spec_ops(cpu_rewrite["spec"]), cpu_rewrite["spec"]  # the CPU: as written
    plan = _cuda_plan(ir)
    assert not plan.get("error"), plan
    (rewrite,) = plan["rewrites"]
    spec = rewrite["spec"]
    ops = _spec_ops(spec)
    assert ops == ["mm", "add", op], spec  # mm, the bias add, the activation: nothing else
    assert not set(ops) & set(DECOMPOSED_OPS), spec
    line = re.search(rf"^%(\d+) = {op} %(\d+) : (\w+)$", spec, re.M)
    assert line and line.group(3) == dt, spec  # rounded once to the tensor's dtype
    assert f"output %{line.group(1)}" in spec, spec
    (entry,) = plan["report"]
    assert entry["status"] == "fused" and entry["chain"] == f"addmm+bias → {op}", entry


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("act", ACTS)
def test_compiled_chain_matches_eager(act, dt):
    fn, op, decomposed = ACTS[act]
    decomposed_op = decomposed.split(".")[1]  # "aten.exp.default" -> "exp"
    dtype = DTYPES[dt]
    compiled = torch.compile(fn, backend="fxfuse")
    with torch.no_grad():
        for _ in range(2):  # fresh inputs each time, after the first compiled the graph
            args = _args(dtype)
            out, ref = compiled(*args), fn(*args)
            assert out.dtype == ref.dtype == dtype
            assert rel_err(out, ref) < TOL[dtype], rel_err(out, ref)
    assert fxfuse.stats()["chains_fused"] == 1
    specs = [rw["spec"] for _, plan, _ in recent_plans() for rw in plan.get("rewrites", [])]
    assert len(specs) == 1, specs
    # Inductor's activation reaches the pass as eager's one op (python/fxfuse/decomposed_activations.py)
    assert op in _spec_ops(specs[0]) and decomposed_op not in _spec_ops(specs[0]), specs


def _hand_gelu_tanh(half):
    """GELU(tanh) written out in torch's own form (the cube as (y * y) * y), `half` for its 0.5."""
    def fn(x, w, b):
        y = F.linear(x, w, b)
        return half * y * (1 + torch.tanh(0.7978845608028654 * (y + 0.044715 * (y * y * y))))
    return fn


@pytest.mark.parametrize("half", [0.5, 0.4])
def test_hand_written_gelu_tanh_is_rewritten_only_with_torchs_constants(half):
    """The same hand-written form with 0.5 becomes `gelu_tanh` on CUDA (so the 0.4 case below is
    a near miss only by its constant), and with 0.4 stays decomposed and computes something else;
    through the backend on the CPU both give eager's answer of the function written."""
    fn = _hand_gelu_tanh(half)
    args = _args(torch.float32)
    compiled = torch.compile(fn, backend="fxfuse")
    with torch.no_grad():
        out = compiled(*args)
        assert rel_err(out, fn(*args)) < TOL[torch.float32]
        gelu = F.gelu(F.linear(*args), approximate="tanh")
        assert (rel_err(out, gelu) < TOL[torch.float32]) == (half == 0.5)
    assert fxfuse.stats()["chains_fused"] == 1
    (ir,) = _capture_post_grad(fn, *args)
    (rewrite,) = _cuda_plan(ir)["rewrites"]
    ops = _spec_ops(rewrite["spec"])
    if half == 0.5:
        assert ops == ["mm", "add", "gelu_tanh"], rewrite["spec"]
    else:
        assert "tanh" in ops and "gelu_tanh" not in ops, rewrite["spec"]
