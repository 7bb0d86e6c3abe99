"""Single eager ops that the torch.compile backend's graphs hold as several 16-bit steps (session 57's hunt,
tests/reliability/hunt_session57): their intermediates were rounded in the chain where eager's kernel (and Inductor)
keeps them in f32. The backend names them to the pass (python/fxfuse/decomposed_groups.py), which leaves them to
Inductor; the GEMM before them still fuses where it has other epilogue ops, and ops whose decomposition computes in
f32 or only selects stay fused."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxfuse
import testlib
from helpers import GemmThen

LEFT_TO_INDUCTOR = {
    "lerp": lambda y: torch.lerp(y, torch.full_like(y, -5.71875), 0.3),
    "softshrink": lambda y: F.softshrink(y, 0.3),
}
STILL_FUSED = {
    "leaky_relu": lambda y: F.leaky_relu(y, 0.1),
    "hardswish": F.hardswish,
    "silu": F.silu,
    "round_decimals": lambda y: torch.round(y, decimals=1),
}


def _inputs(dtype, name):
    g = testlib.generator("cpu", "decomposed_ops", str(dtype), name)
    x = torch.randn(64, 32, generator=g) * (10.0 ** torch.linspace(-3, 3, 64).unsqueeze(1)) / 5
    return x.to(dtype), torch.randn(128, 32, generator=g).to(dtype)


def _compile_and_run(model, x, w):
    torch._dynamo.reset()
    fxfuse.reset_stats()
    return fxfuse.compile(model, only_profitable=False)(x, w), str(fxfuse.report())


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("name", list(LEFT_TO_INDUCTOR))
def test_an_op_inductor_writes_as_16bit_steps_is_left_to_inductor(dtype, name):
    x, w = _inputs(dtype, name)
    model = GemmThen(LEFT_TO_INDUCTOR[name])
    got, report = _compile_and_run(model, x, w)
    assert "a step of one eager op whose 16-bit intermediates eager does not round" in report, report
    torch._dynamo.reset()
    # Inductor's own answer, which keeps the intermediates in f32 (before: one step off at 3-20 % of the elements)
    torch.testing.assert_close(got, torch.compile(model)(x, w), rtol=0, atol=0, equal_nan=True)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("name", list(STILL_FUSED))
def test_ops_whose_decomposition_computes_in_f32_or_selects_stay_fused(dtype, name):
    x, w = _inputs(dtype, name)
    model = GemmThen(STILL_FUSED[name])
    got, report = _compile_and_run(model, x, w)
    assert fxfuse.stats()["chains_fused"] == 1 and "eager does not round" not in report, report
    torch.testing.assert_close(got, model(x, w), rtol=0, atol=0, equal_nan=True)


@pytest.mark.needs_real_pass
def test_a_users_own_steps_stay_fused():
    """`y * 0.3 + 1` written out is two eager ops, each rounded by eager: not a group, fused, eager's bits."""
    x, w = _inputs(torch.bfloat16, "own")
    model = GemmThen(lambda y: torch.relu(y * 0.3 + 1))
    got, report = _compile_and_run(model, x, w)
    assert fxfuse.stats()["chains_fused"] == 1, report
    torch.testing.assert_close(got, model(x, w), rtol=0, atol=0, equal_nan=True)


@pytest.mark.needs_real_pass
def test_a_pass_switched_off_leaves_the_graph_as_inductor_made_it():
    """enabled=False: no collapse, reroute or grouping runs (review, session 57: the reroute ran with the pass off);
    the program is Inductor's, bit for bit."""
    x, w = _inputs(torch.bfloat16, "off")
    model = GemmThen(lambda y: torch.round(torch.lerp(y, torch.full_like(y, 2.5), 0.3), decimals=1))
    torch._dynamo.reset()
    fxfuse.reset_stats()
    got = fxfuse.compile(model, enabled=False)(x, w)
    assert fxfuse.stats()["chains_fused"] == 0
    torch._dynamo.reset()
    torch.testing.assert_close(got, torch.compile(model)(x, w), rtol=0, atol=0, equal_nan=True)


class LinearGelu(torch.nn.Module):
    def __init__(self, view):
        super().__init__()
        self.lin = torch.nn.Linear(32, 48)
        self.view = view

    def forward(self, x):
        return F.gelu(self.lin(self.view(x)), approximate="tanh")


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("view", ["slice", "transpose"])
def test_a_linear_on_a_non_contiguous_input_is_fused_with_eagers_roundings(view):
    """Inductor writes such a linear as `mm -> view -> add(bias)`, one origin: eager's at::linear rounds the product
    there too (matmul, then add), so the group is not named and the chain fuses with eager's bits (session 58's hunt:
    it had been left bare, 593 of 2,880 bf16 elements off eager)."""
    g = testlib.generator("cpu", "linear_non_contiguous", view)
    model = LinearGelu((lambda x: x[:, 1:]) if view == "slice" else (lambda x: x.transpose(0, 1))).bfloat16()
    x = torch.randn(4, 16, 32, generator=g).bfloat16()
    torch._dynamo.reset()
    fxfuse.reset_stats()
    with torch.no_grad():
        got = fxfuse.compile(model, only_profitable=False)(x)
        want = model(x)
    report = str(fxfuse.report())
    assert fxfuse.stats()["chains_fused"] == 1 and "eager does not round" not in report, report
    torch.testing.assert_close(got, want, rtol=0, atol=0)
