"""Shared pytest set-up: find the package in the source tree when it is not installed, and
keep GPU-marked tests off machines without a CUDA GPU (scripts/test.sh deselects them there;
scripts/gpu-check.sh runs them on the GPU machine)."""
import os
import sys

# Every torch.compile in the tests must run the pass (counters and dumps are asserted), so no
# FX/AOT graph cache: set before anything imports torch._inductor.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/testlib.py
try:
    import fxfuse  # noqa: F401  (installed by scripts/setup.sh)
except ImportError:
    sys.path.insert(0, os.path.join(_ROOT, "python"))


def pytest_collection_modifyitems(config, items):
    import torch
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: run scripts/gpu-check.sh on the GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
