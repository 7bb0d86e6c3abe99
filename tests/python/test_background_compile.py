"""fxfuse.set_background_compile / wait_for_compiles (python/fxfuse/background_compile.py): the
switch, its environment variable and its counters, on any machine. What it does to a CUDA call
(ATen while the kernel compiles, the kernel after) is tests/runtime/test_gemm_chain_cuda.py's
background cases (GPU)."""
import os
import subprocess
import sys

import pytest

import fxfuse


@pytest.fixture
def restore():
    before = fxfuse.background_compile()
    yield
    fxfuse.set_background_compile(before)


def test_switch_round_trips(restore):
    fxfuse.set_background_compile(True)
    assert fxfuse.background_compile() is True
    fxfuse.set_background_compile(False)
    assert fxfuse.background_compile() is False


@pytest.mark.parametrize("bad", ["no", "0", "off", None])
def test_the_switch_takes_a_bool(restore, bad):
    """`bool("no")` had turned background compiles on (hunt B, session 53)."""
    fxfuse.set_background_compile(False)
    with pytest.raises(TypeError, match="must be a bool"):
        fxfuse.set_background_compile(bad)
    assert fxfuse.background_compile() is False


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("ON", True), ("0", False), ("", False),
                                             (None, False), ("false", False), ("no", False), ("off", False)])
def test_environment_variable_sets_the_default(value, expected):
    env = {k: v for k, v in os.environ.items() if k != "FXFUSE_BACKGROUND_COMPILE"}
    if value is not None:
        env["FXFUSE_BACKGROUND_COMPILE"] = value
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(fxfuse.__file__)),
                                         env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", "import fxfuse; print(fxfuse.background_compile())"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == str(expected)


def test_counters_are_reported_and_nothing_waits_when_idle():
    s = fxfuse.stats()
    assert "background_compiles" in s and "background_compile_calls" in s
    assert fxfuse.wait_for_compiles(timeout_s=0) is True
    assert fxfuse.wait_for_compiles() is True


@pytest.mark.parametrize("bad", [-1, float("nan")])
def test_negative_or_nan_timeout_is_an_error(bad):
    with pytest.raises(ValueError, match="timeout_s"):
        fxfuse.wait_for_compiles(timeout_s=bad)


def test_cpu_calls_never_go_to_the_background(restore):
    """CPU tensors run the reference kernel whatever the switch says: nothing is queued."""
    import torch
    from fxfuse import _C
    fxfuse.set_background_compile(True)
    spec = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n"
            "%2 = mm %0 %1 : f32\n%3 = relu %2 : f32\noutput %3\n")
    x, w = torch.randn(8, 16, dtype=torch.float64).float(), torch.randn(16, 4).float()
    before = _C.stats()
    (out,) = torch.ops.fxfuse.gemm_chain([x, w], spec)
    after = _C.stats()
    assert after["background_compiles"] == before["background_compiles"]
    torch.testing.assert_close(out, torch.relu(x.double() @ w.double()).float(), rtol=1e-5, atol=1e-5)
