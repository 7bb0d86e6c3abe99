"""The generated Hopper kernel's machine code (issue 6: "check with the SASS that the matrix
instructions are HGMMA"): wgmma (HGMMA) for the products, TMA (UTMALDG) for the loads, no
mma.sync fallback and no local-memory spills. The cubin comes from NVRTC and the SASS from the
CUDA toolkit's cuobjdump where there is one (the GPU machine) or pip's nvdisasm (scripts/setup.sh
installs it elsewhere): no GPU needed, so CI runs these."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

import fxfuse._C as C

pytestmark = pytest.mark.skipif(os.environ.get("FXFUSE_NO_NVRTC") == "1", reason="FXFUSE_NO_NVRTC=1: no NVRTC on purpose")


def sass_of(cubin) -> str:
    """The cubin's SASS: cuobjdump -sass, else nvdisasm (pip nvidia-cuda-nvdisasm); neither is a failure."""
    cuobjdump = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if os.path.exists(cuobjdump):
        return subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    import nvidia.cu13  # noqa: F401 - where pip puts nvdisasm

    tools = [os.path.join(p, "bin", "nvdisasm") for p in nvidia.cu13.__path__] + [shutil.which("nvdisasm") or ""]
    tool = next((t for t in tools if t and os.path.exists(t)), None)
    assert tool, "no cuobjdump (CUDA toolkit) and no nvdisasm (pip nvidia-cuda-nvdisasm: scripts/setup.sh)"
    return subprocess.run([tool, str(cubin)], capture_output=True, text=True, check=True).stdout


def _spec(b_dims: str) -> str:
    return ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n"
            f"%1 = input 1 bf16 [{b_dims}]\n%2 = mm %0 %1 : f32\n"
            "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\noutput %5\n")


@pytest.mark.parametrize("b_dims", ["k,n", "n,k"], ids=["x@w", "linear"])
def test_hopper_kernel_is_hgmma_and_tma(tmp_path, b_dims):
    spec = _spec(b_dims)
    assert C.kernel_variant(spec, 4096, 4096, 4096)[0] == "sm90_wgmma"
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(C.compile_cubin(spec, 4096, 4096, 4096, "sm_90"))
    sass = sass_of(cubin)
    hgmma = re.findall(r"HGMMA\.64x(\d+)x16", sass)
    assert len(hgmma) >= 4 and set(hgmma) == {"256"}, hgmma[:8]  # 256 columns (128x256 at 4096^3)
    assert "UTMALDG" in sass
    assert not re.search(r"\bHMMA\b", sass), "an mma.sync product in the Hopper kernel"
    assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills"


def overlapped_sass(tmp_path, spec: str, **knobs) -> str:
    """The SASS of the overlapped kernel the planner takes at 4096^3 for `spec` (128x256), built in a child:
    FXFUSE_SM90_EPILOGUE_OVERLAP=1 is read once per process; `knobs`, more FXFUSE_SM90_* variables."""
    cubin = tmp_path / "overlapped.cubin"
    code = ("import sys, fxfuse._C as C\n"
            f"spec = {spec!r}\n"
            "tile = C.kernel_candidates_for_size(spec, 4096, 4096, 4096)[0]\n"
            f"assert ' epioverlap' in tile and (' lastshared' in tile) == {knobs.get('FXFUSE_SM90_LAST_EPILOGUE_SHARED') == '1'}, tile\n"
            "open(sys.argv[1], 'wb').write(C.compile_cubin(spec, 4096, 4096, 4096, 'sm_90'))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXFUSE_SM90_")}
    env.update(FXFUSE_SM90_EPILOGUE_OVERLAP="1", **knobs)
    subprocess.run([sys.executable, "-c", code, str(cubin)], env=env, check=True, timeout=300)
    return sass_of(cubin)


BIAS_GELU_SPEC = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n"
                  "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n")


def test_overlapped_epilogue_kernel_is_hgmma_and_tma(tmp_path):
    """The same for the overlapped epilogue (FXFUSE_SM90_EPILOGUE_OVERLAP=1): HGMMA 64x256 in the consumers,
    TMA loads, the named-barrier hand-off (BAR.ARV / BAR.SYNC), no local memory, at the planner's 128x256 tile
    for x @ w with a bias and GELU (the hand-off the product's)."""
    sass = overlapped_sass(tmp_path, BIAS_GELU_SPEC)
    hgmma = re.findall(r"HGMMA\.64x(\d+)x16", sass)
    assert len(hgmma) >= 4 and set(hgmma) == {"256"}, hgmma[:8]
    assert "UTMALDG" in sass
    assert re.search(r"\bBAR\.ARV\b", sass) and re.search(r"\bBAR\.SYNC\b", sass), "no named-barrier hand-off"
    assert not re.search(r"\bHMMA\b", sass), "an mma.sync product in the Hopper kernel"
    assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills"


def test_shared_last_tile_joins_within_the_epilogue_warps_registers(tmp_path):
    """FXFUSE_SM90_LAST_EPILOGUE_SHARED=1: the consumers give back their registers (a consumer-only barrier, then
    setmaxnreg.dec: USETMAXREG.DEALLOC) and join the epilogue warps' loop, so the epilogue's code, and its wait on
    the hand-off (BAR.SYNC 1 over 352 threads), is there once, and everything from that wait on fits the 88
    registers both roles arrive with (a register numbered 88 or more there would be one the epilogue warps do
    not own). The chain adds a residual: the most live values of the bench chains."""
    spec = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n"
            "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\n%6 = input 3 bf16 [m,n]\n"
            "%7 = add %5 %6 : bf16\noutput %7\n")
    sass = overlapped_sass(tmp_path, spec, FXFUSE_SM90_LAST_EPILOGUE_SHARED="1")
    lines = [line for line in sass.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", line)]
    waits = [i for i, line in enumerate(lines) if re.search(r"BAR\.SYNC(\.DEFER_BLOCKING)? 0x1, 0x160", line)]
    assert len(waits) == 1, f"{len(waits)} hand-off waits: the epilogue's code is not there once"
    assert any(re.search(r"BAR\.SYNC(\.DEFER_BLOCKING)? 0x3, 0x100", line) for line in lines), "no consumer barrier"
    assert sum("USETMAXREG.DEALLOC" in line for line in lines) == 2, "the consumers do not give back registers"
    joined = [int(r) for line in lines[waits[0]:] for r in re.findall(r"\bR(\d+)\b", line)]
    assert joined and max(joined) < 88, f"R{max(joined)} after the hand-off wait"
    assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills"

