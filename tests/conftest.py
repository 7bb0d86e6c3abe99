"""Shared pytest set-up: find the package in the source tree when it is not installed, keep GPU-marked
tests off machines without a CUDA GPU (scripts/test.sh deselects them there; scripts/gpu-check.sh runs them on
the GPU machine), and seed every test's random inputs afresh each run (testlib.RUN_SEED, printed at the start
and end of the run and with each failure; FXFUSE_TEST_SEED=N repeats a run's inputs)."""
import os
import sys

# Every torch.compile in the tests must run the pass (counters and dumps are asserted), so no
# FX/AOT graph cache: set before anything imports torch._inductor.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/testlib.py
import testlib  # noqa: E402  (draws the run's seed before xdist starts its workers: they inherit it)
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


@pytest.fixture(autouse=True)
def _fresh_random_inputs(request):
    """Each test starts from its own seed, new each run (testlib.seed_for: the run's seed and the test's id)."""
    testlib.seed(request.node.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("fxfuse test seed", f"FXFUSE_TEST_SEED={testlib.RUN_SEED} repeats this run's inputs"))


def pytest_sessionstart(session):
    # at the start too, where a run is killed before its summary (the GPU scripts' timeouts); a line, not a
    # report header, which -q hides; in xdist's workers there is no terminal
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not hasattr(session.config, "workerinput"):
        reporter.write_line(f"fxfuse test seed: FXFUSE_TEST_SEED={testlib.RUN_SEED}")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"fxfuse test seed: FXFUSE_TEST_SEED={testlib.RUN_SEED}")
