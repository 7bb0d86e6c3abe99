"""Test setup: ``python/`` on sys.path, the pure-Python stand-in for ``fxfuse._C`` while the
extension is not built (FXFUSE_TEST_STANDIN=1 forces it), Inductor caches off so every
compile runs the pass, and the ``gpu`` / ``needs_real_pass`` markers."""
from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

# Every compile must run the pass (the counters are asserted): no FX/AOT graph cache.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")

import _standin  # noqa: E402

STANDIN = _standin.install()
# With FXFUSE_TEST_PASS=opt the stand-in's plans come from the C++ pass (fxfuse-opt):
# the tests that need the real pass can run; only the op's CPU kernel is Python.
REAL_PASS = not STANDIN or getattr(sys.modules["fxfuse._C"], "PASS", "") == "fxfuse-opt"

import torch  # noqa: E402

import fxfuse  # noqa: E402,F401


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device")
    config.addinivalue_line("markers", "needs_real_pass: needs the C++ pass (fxfuse._C), not the test stand-in")


def pytest_report_header(config):
    if STANDIN:
        why = f" (real extension: {_standin.REAL_LOAD_ERROR})" if _standin.REAL_LOAD_ERROR else ""
        return f"fxfuse._C: test stand-in, pass={sys.modules['fxfuse._C'].PASS}{why}"
    return f"fxfuse._C: {fxfuse._C.__file__}"


def pytest_collection_modifyitems(config, items):
    no_gpu = not torch.cuda.is_available()
    for item in items:
        if no_gpu and "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="no CUDA device"))
        if not REAL_PASS and "needs_real_pass" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="needs the C++ pass; fxfuse._C is the test stand-in"))


@pytest.fixture(autouse=True)
def _fresh_state():
    torch._dynamo.reset()
    fxfuse.reset_stats()
    yield  # the inputs' seed: tests/conftest.py's _fresh_random_inputs (fresh each run)


@pytest.fixture
def standin():
    return STANDIN


@pytest.fixture
def bench_module(monkeypatch):
    """Imports a script of bench/ as a module by name (bench/ and python/ on the path for the test)."""
    import importlib

    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))
    monkeypatch.syspath_prepend(os.path.join(ROOT, "python"))
    return importlib.import_module
