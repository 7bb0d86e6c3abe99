"""`torch.compile(backend="fxfuse")` by name in a process that never imports fxfuse: Dynamo
finds the `torch_dynamo_backends` entry point `fxfuse = fxfuse.backend:fxfuse_backend`
(here from a throwaway .dist-info; the real one comes from the package metadata)."""
from __future__ import annotations

import os

from helpers import run_python

CODE = """
import os, torch
assert "fxfuse" not in sys.modules
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU()).eval()
x = torch.randn(4, 16)
with torch.no_grad():
    out = torch.compile(m, backend="fxfuse")(x)
    assert (out - m(x)).abs().max() < 1e-4
import fxfuse
assert fxfuse.stats()["chains_fused"] == 1, fxfuse.stats()
print("ok")
"""


def test_backend_by_entry_point(tmp_path):
    dist = tmp_path / "fxfuse_entrypoint_test-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fxfuse-entrypoint-test\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[torch_dynamo_backends]\nfxfuse = fxfuse.backend:fxfuse_backend\n")
    code = f"sys.path.insert(0, {str(tmp_path)!r})\n" + CODE
    env_backup = os.environ.get("TORCHINDUCTOR_FX_GRAPH_CACHE")
    res = run_python(code)
    assert env_backup == os.environ.get("TORCHINDUCTOR_FX_GRAPH_CACHE")
    assert res.returncode == 0 and "ok" in res.stdout, res.stdout + res.stderr
