"""The NVRTC worker from Python (codegen/nvrtc_worker.h): every compile runs in fxfuse-nvrtc-worker, so a
compiler that crashes fails one kernel with a named error and the caller's process lives on. With a
stand-in libnvrtc (tests/codegen/fake_nvrtc.cpp, built with the C++ tests) whose compile dies by
SIGSEGV, in a child process each (loadNvrtc keeps one library per process):
  - CPU: `_C.compile_ptx` raises RuntimeError naming the signal; the same compile in-process
    (FXFUSE_COMPILE_IN_PROCESS=1) kills the child, which is what the worker prevents;
  - GPU: the op answers from ATen, correct against float64, counts the crash in compiler_crashes
    and does not compile again at the next call.
"""
import os
import subprocess
import sys

import pytest
import torch

import testlib
import fxfuse._C as C

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SPEC = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
        "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n")


def fake_nvrtc() -> str:
    """The stand-in libnvrtc of this build (the C++ tests build it: scripts/setup.sh, CMake's default)."""
    builds = [os.environ.get("FXFUSE_BUILD_DIR", ""), "build-py", "build", "build-gpu"]
    for b in filter(None, builds):
        path = os.path.join(ROOT, b, "tests", "codegen", "libfxfuse_fake_nvrtc.so")
        if os.path.exists(path):
            return path
    raise AssertionError(f"libfxfuse_fake_nvrtc.so not built under {builds} (tests/codegen/CMakeLists.txt)")


def child(code: str, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("FXFUSE_", "FAKE_NVRTC"))}
    full.update({"FXFUSE_NVRTC_PATH": fake_nvrtc(), "FAKE_NVRTC_COMPILE": "segv", **env})
    full["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(C.__file__)))  # this fxfuse
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=300)


def test_the_worker_is_installed_beside_the_extension():
    worker = os.path.join(os.path.dirname(os.path.abspath(C.__file__)), "fxfuse-nvrtc-worker")
    assert os.access(worker, os.X_OK), worker
    assert os.path.samefile(C.nvrtc_worker_path(), worker)


WARNS = ("import warnings\nwarnings.simplefilter('always')\n"
         "with warnings.catch_warnings(record=True) as seen:\n    import fxfuse\n"
         "print([str(w.message) for w in seen if 'NVRTC worker' in str(w.message)])\n")


# The import's check again where an install without the executable finds no worker path (the build tree's
# worker would be found here otherwise).
WARNS_WITHOUT_WORKER = ("import warnings\nwarnings.simplefilter('always')\nimport fxfuse\n"
                        "fxfuse._C.nvrtc_worker_path = lambda: ''\n"
                        "with warnings.catch_warnings(record=True) as seen:\n    fxfuse._warn_without_compile_worker()\n"
                        "print([str(w.message) for w in seen if 'NVRTC worker' in str(w.message)])\n")


def test_an_install_without_the_worker_warns_at_import():
    r = child(WARNS_WITHOUT_WORKER)
    assert r.returncode == 0 and "compile in this process" in r.stdout, (r.stdout, r.stderr[-2000:])
    r = child(WARNS_WITHOUT_WORKER, FXFUSE_COMPILE_IN_PROCESS="1")  # meant: no warning
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr[-2000:])
    r = child(WARNS)  # the worker beside _C: no warning
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr[-2000:])


def test_an_empty_worker_variable_is_unset():
    """FXFUSE_NVRTC_WORKER="" had meant no worker: every kernel compiled in the user's process, where a compiler
    crash ends it, under a warning that blamed the install (hunt B, session 53). Empty is unset, as for every
    FXFUSE_ variable; so is an empty FXFUSE_COMPILE_TIMEOUT_S, which had failed every compile."""
    r = child(WARNS + "import fxfuse._C as C\nprint(C.nvrtc_worker_path())\n", FXFUSE_NVRTC_WORKER="")
    assert r.returncode == 0, r.stderr[-2000:]
    warned, path = r.stdout.strip().splitlines()
    assert warned == "[]" and os.path.basename(path) == "fxfuse-nvrtc-worker", r.stdout
    r = child(COMPILE, FXFUSE_COMPILE_TIMEOUT_S="", FAKE_NVRTC_COMPILE="ok")
    assert "is not a positive number" not in r.stdout and "compiles nothing" in r.stdout, r.stdout


COMPILE = ("import fxfuse._C as C\n"
           f"spec = {SPEC!r}\n"
           "try:\n"
           "    C.compile_ptx(spec, 4096, 4096, 4096, 'sm_90')\n"
           "    print('compiled')\n"
           "except RuntimeError as e:\n"
           "    print('raised:', e)\n"
           "print('alive')\n")


def test_a_crashing_compiler_raises_and_the_process_lives():
    r = child(COMPILE)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "raised:" in r.stdout and "killed by signal 11" in r.stdout and r.stdout.strip().endswith("alive"), r.stdout


def test_in_process_the_same_crash_kills_the_process():
    r = child(COMPILE, FXFUSE_COMPILE_IN_PROCESS="1")
    assert r.returncode == -11 and "alive" not in r.stdout, (r.returncode, r.stdout, r.stderr[-2000:])


OP = """
import torch, fxfuse._C as C
spec = {spec!r}
torch.manual_seed({seed})  # fresh each run (child() passes no FXFUSE_ variable)
x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
w = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16) / 32
b = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
ref = torch.nn.functional.gelu(x.double() @ w.double() + b.double(), approximate="tanh")
op = torch.ops.fxfuse.gemm_chain.default
C.reset_stats()
for call in range(2):
    out = op([x, w, b], spec)[0]
    torch.cuda.synchronize()
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert err < 2e-2, (call, err)
    s = C.stats()
    print(call, s["compiler_crashes"], s["kernels_compiled"], s["launches"], err)
    if call == 0:
        first = s["compiler_crashes"]
        assert first >= 1 and s["kernels_compiled"] == 0 and s["launches"] == 0, s
    else:
        assert s["compiler_crashes"] == first, s  # remembered: no second compile
print("ok")
"""


@pytest.mark.gpu
def test_the_op_answers_from_aten_when_the_compiler_crashes(tmp_path):
    r = child(OP.format(spec=SPEC, seed=testlib.seed_for("compiler_crash")), FXFUSE_CACHE_DIR=str(tmp_path), FXFUSE_POISON_OUTPUTS="1")
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-3000:]
    assert "killed by signal 11" in r.stderr, r.stderr[-3000:]  # the op's warning names the crash
