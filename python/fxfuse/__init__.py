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

__all__ = ["rewrite", "compile", "backend_with", "fxfuse_backend", "FxfusePass", "Options",
           "stats", "reset_stats", "report", "set_background_compile", "background_compile",
           "wait_for_compiles"]

_register_backend()
