"""The generated Hopper kernel's machine code (issue 6: "check with the SASS that the matrix
instructions are HGMMA"): wgmma (HGMMA) for the products, TMA (UTMALDG) for the loads, no
mma.sync fallback and no local-memory spills. The cubin comes from NVRTC (no GPU needed);
cuobjdump is on the GPU machine, so the test is marked gpu."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

import fxfuse._C as C

pytestmark = pytest.mark.gpu


def _spec(b_dims: str) -> str:
    return ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n"
            f"%1 = input 1 bf16 [{b_dims}]\n%2 = mm %0 %1 : f32\n"
            "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\noutput %5\n")


@pytest.mark.parametrize("b_dims", ["k,n", "n,k"], ids=["x@w", "linear"])
def test_hopper_kernel_is_hgmma_and_tma(tmp_path, b_dims):
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    assert os.path.exists(tool), "cuobjdump not found (CUDA toolkit's bin/)"
    spec = _spec(b_dims)
    assert C.kernel_variant(spec, 4096, 4096, 4096)[0] == "sm90_wgmma"
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(C.compile_cubin(spec, 4096, 4096, 4096, "sm_90"))
    sass = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    hgmma = re.findall(r"HGMMA\.64x(\d+)x16", sass)
    assert len(hgmma) >= 4 and set(hgmma) == {"256"}, hgmma[:8]  # 256 columns (128x256 at 4096^3)
    assert "UTMALDG" in sass
    assert not re.search(r"\bHMMA\b", sass), "an mma.sync product in the Hopper kernel"
    assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills"
