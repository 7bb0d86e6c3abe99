"""fxfuse: prologue → GEMM → epilogue fusion for PyTorch graphs.

    import fxfuse
    torch.compile(model, backend="fxfuse")      # Inductor + the fxfuse post-grad pass
    fxfuse.compile(model, mode=..., dump_dir=...)
    ep2 = fxfuse.rewrite(torch.export.export(model, args))
    print(fxfuse.report(ep2)); fxfuse.stats()
"""
from __future__ import annotations

import logging

# torch first: _C links libtorch, and loading it before torch's own Python module has set
# itself up crashes a CUDA build of torch at import (seen on the GPU machine, torch 2.11).
import torch  # noqa: F401

try:
    from . import _C  # noqa: F401 - registers torch.ops.fxfuse.gemm_chain
except ImportError as e:  # pragma: no cover - exercised only on a broken install
    import glob as _glob
    import os as _os

    if _glob.glob(_os.path.join(_os.path.dirname(__file__), "_C*.so")):
        raise ImportError(f"fxfuse._C failed to load (rebuild it: scripts/setup.sh): {e}") from e
    raise ImportError("fxfuse._C is not built: run scripts/setup.sh") from e

from .background_compile import background_compile, set_background_compile, wait_for_compiles
from .backend import FxfusePass, backend_with, compile, fxfuse_backend, register as _register_backend
from .export_rewrite import report, rewrite
from .pass_driver import Options
from .stats import reset_stats, stats

logging.getLogger("fxfuse").addHandler(logging.NullHandler())


def _warn_without_compile_worker() -> None:
    """Every kernel compiles in fxfuse-nvrtc-worker, installed beside _C, so that a compiler crash
    costs one kernel and not the user's process. An install without it still compiles, in this
    process: said once here, not silently (``FXFUSE_COMPILE_IN_PROCESS=1`` says it is meant)."""
    import warnings

    from .env_flags import env_flag

    if not env_flag("FXFUSE_COMPILE_IN_PROCESS") and not _C.nvrtc_worker_path():
        warnings.warn("fxfuse: the NVRTC worker (fxfuse-nvrtc-worker) is not installed beside fxfuse._C, so "
                      "kernels compile in this process, where a compiler crash would end it. Reinstall fxfuse "
                      "(scripts/setup.sh), name the worker with FXFUSE_NVRTC_WORKER, or set "
                      "FXFUSE_COMPILE_IN_PROCESS=1 to compile here knowingly.", RuntimeWarning, stacklevel=3)


_warn_without_compile_worker()

__all__ = ["rewrite", "compile", "backend_with", "fxfuse_backend", "FxfusePass", "Options",
           "stats", "reset_stats", "report", "set_background_compile", "background_compile",
           "wait_for_compiles"]

_register_backend()
