"""Caches and environment: the parsed-spec cache and the reference op under threads, the
on-disk cubin cache (corrupt/truncated entries, read-only or uncreatable directories, two
processes compiling one kernel at once), and a machine without libnvrtc/libcuda.

Most disk-cache tests need kernels, hence a GPU; what can run without one runs on CPU: thread
safety of the spec cache and the CPU kernel, FXFUSE_CACHE_DIR pointing somewhere unusable, and
an import/run with NVRTC and the CUDA driver made unfindable.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F
import testlib
from testlib import Fn, run_threads

fxfuse = pytest.importorskip("fxfuse", reason="fxfuse._C is not built")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYDIR = os.path.dirname(os.path.dirname(os.path.abspath(fxfuse.__file__)))  # where fxfuse was imported from
# what a child process imports: fxfuse from the same place, this module, tests/testlib.py
CHILD_PATH = os.pathsep.join([PYDIR, HERE, os.path.dirname(HERE)])


def block(x, w1, b1, w2, r):
    """Two chains that share nothing but the thread pool."""
    h = F.gelu(F.linear(x, w1, b1), approximate="tanh")
    return torch.relu(h @ w2 + r), torch.sigmoid(h)


def _inputs(device="cpu", dtype=torch.float32, seed=0):
    g = testlib.generator("cpu", "cache_inputs", seed)  # the same within a run, fresh each run
    t = [torch.randn(8, 32, generator=g), torch.randn(24, 32, generator=g) / 6, torch.randn(24, generator=g),
         torch.randn(24, 16, generator=g) / 5, torch.randn(8, 16, generator=g)]
    return [x.to(device=device, dtype=dtype) for x in t]


def _spec(i: int) -> str:
    """Distinct valid specs (the scale constant differs), for the spec cache."""
    return textwrap.dedent(f"""\
        fxfuse.chain v1
        gemm mm
        %0 = input 0 f32 [m,k]
        %1 = input 1 f32 [k,n]
        %2 = mm %0 %1 : f32
        %3 = const {i + 0.5} : f32
        %4 = mul %2 %3 : f32
        %5 = tanh %4 : f32
        output %5
        """)


# ---------------------------------------------------------------------------------------------
# CPU


def test_threads_share_rewritten_model_cpu():
    ins = _inputs()
    ep2 = fxfuse.rewrite(torch.export.export(Fn(block), tuple(ins)))
    assert sum("gemm_chain" in str(n.target) for n in ep2.graph.nodes) >= 1, fxfuse.report(torch.export.export(Fn(block), tuple(ins)))
    model = ep2.module()
    ref = block(*ins)

    def worker(k):
        for _ in range(30):
            out = model(*ins)
            for o, r in zip(out, ref):
                torch.testing.assert_close(o, r, rtol=1e-5, atol=1e-5)

    errors = run_threads(worker)
    assert not errors, errors[:3]


def test_threads_parse_many_specs_cpu():
    """Many threads parsing distinct and shared specs at once (the spec cache is shared)."""
    a, b = torch.randn(4, 6), torch.randn(6, 3)
    accepted: list[str] = []

    def worker(k):
        for i in range(60):
            j = (i * 7 + k) % 40
            (y,) = torch.ops.fxfuse.gemm_chain.default([a, b], _spec(j))
            torch.testing.assert_close(y, torch.tanh((a @ b) * (j + 0.5)), rtol=1e-5, atol=1e-5)
            if i % 10 == 0:  # a bad spec in between must not poison the cache
                try:
                    torch.ops.fxfuse.gemm_chain.default([a, b], _spec(j).replace("tanh", "tanhh"))
                    accepted.append(f"thread {k}: bad spec accepted")
                except RuntimeError:
                    pass

    errors = run_threads(worker) + accepted
    assert not errors, errors[:3]


def _child(code: str, env_updates: dict, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()}
    env.update(env_updates)
    env["PYTHONPATH"] = CHILD_PATH
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)


_RUN_BLOCK = textwrap.dedent("""
    import json, sys, warnings, torch
    warnings.simplefilter("always")
    import fxfuse
    from test_cache import Fn, block, _inputs
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    dev = "cuda" if torch.cuda.is_available() and "{device}" == "cuda" else "cpu"
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    ins = _inputs(dev, dtype)
    with warnings.catch_warnings(record=True) as caught:
        ep2 = fxfuse.rewrite(torch.export.export(Fn(block), tuple(ins)))
        m = ep2.module()
        outs = [m(*ins) for _ in range(3)]
        if dev == "cuda":
            torch.cuda.synchronize()
    ref = block(*[t.double() for t in ins])
    err = max(((o.double() - r).norm() / r.norm()).item() for o, r in zip(outs[-1], ref))
    fused = sum("gemm_chain" in str(n.target) for n in ep2.graph.nodes)
    st = fxfuse.stats()
    print("RESULT " + json.dumps({{"err": err, "fused": fused, "device": dev,
        "warnings": [str(w.message)[:300] for w in caught],
        "stats": {{k: v for k, v in st.items() if isinstance(v, (int, float))}}}}))
""")


def run_block_child(env_updates: dict, device: str = "cpu") -> dict:
    p = _child(_RUN_BLOCK.format(device=device), env_updates)
    assert p.returncode == 0, f"child failed (rc {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    line = next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))
    r = json.loads(line[7:])
    r["stderr"] = p.stderr
    return r


def _scrubbed_env() -> dict:
    """No NVRTC, no CUDA driver: the paths fxfuse would dlopen point nowhere."""
    ld = os.environ.get("LD_LIBRARY_PATH", "")
    keep = ":".join(p for p in ld.split(":") if p and "cuda" not in p.lower() and "nvidia" not in p.lower())
    return {"FXFUSE_NVRTC_PATH": "/nonexistent/libnvrtc.so", "FXFUSE_CUDA_DRIVER_PATH": "/nonexistent/libcuda.so",
            "FXFUSE_LIBCUDA_PATH": "/nonexistent/libcuda.so", "LD_LIBRARY_PATH": keep, "CUDA_HOME": "/nonexistent",
            "CUDA_PATH": "/nonexistent"}


def test_no_nvrtc_no_cuda_cpu_still_works():
    r = run_block_child(_scrubbed_env())
    assert r["err"] < 1e-5, r
    assert r["fused"] >= 1, r
    # on a CPU run nothing needs NVRTC: no warning about it at all
    noisy = [w for w in r["warnings"] if "nvrtc" in w.lower() or "libcuda" in w.lower()]
    assert not noisy, noisy


def test_nvrtc_availability_query_does_not_throw():
    from fxfuse import _C
    for name in ("nvrtc_available", "cuda_driver_available", "cuda_available"):
        fn = getattr(_C, name, None)
        if fn is not None:
            assert isinstance(fn(), bool)


@pytest.mark.parametrize("where", ["uncreatable", "proc", "empty_string"])
def test_unusable_cache_dir_cpu(where):
    """FXFUSE_CACHE_DIR somewhere unusable: import, rewrite and run still work (CPU needs no
    cubins; the point is that nothing at import or in the pass touches the directory fatally)."""
    d = {"uncreatable": "/etc/hostname/fxfuse-cache", "proc": "/proc/self/fxfuse-cache",
         "empty_string": ""}[where]
    r = run_block_child({"FXFUSE_CACHE_DIR": d})
    assert r["err"] < 1e-5 and r["fused"] >= 1, r


def _cache_api():
    from fxfuse import _C
    names = ("set_cache_dir", "cache_dir")
    if not all(hasattr(_C, n) for n in names):
        pytest.skip(f"fxfuse._C exposes no cache-directory API ({names})")
    return _C


def test_set_cache_dir_roundtrip_cpu(tmp_path):
    _C = _cache_api()
    old = _C.cache_dir()
    try:
        _C.set_cache_dir(str(tmp_path / "a" / "b"))
        assert _C.cache_dir() == str(tmp_path / "a" / "b")
        _C.set_cache_dir("/etc/hostname/x")  # uncreatable: no throw
    finally:
        _C.set_cache_dir(old)


# ---------------------------------------------------------------------------------------------
# GPU: the disk cache holds cubins


def _cubins(d) -> list[str]:
    return sorted(glob.glob(os.path.join(str(d), "*.cubin")))


@pytest.mark.gpu
def test_gpu_cache_fills_then_hits(tmp_path):
    env = {"FXFUSE_CACHE_DIR": str(tmp_path)}
    first = run_block_child(env, "cuda")
    assert first["fused"] >= 1 and first["err"] < 2e-2, first
    assert _cubins(tmp_path), "no cubin written to FXFUSE_CACHE_DIR"
    assert not glob.glob(os.path.join(str(tmp_path), ".*.tmp")), "temp files left behind"
    second = run_block_child(env, "cuda")
    assert second["err"] < 2e-2
    st = second["stats"]
    assert st.get("kernels_compiled", 0) == 0 or st.get("disk_hits", st.get("cache_hits", 0)) > 0, st


@pytest.mark.gpu
@pytest.mark.parametrize("damage", ["truncate_header", "truncate_payload", "flip_payload_byte", "garbage",
                                    "empty", "wrong_key"])
def test_gpu_corrupt_entries_are_rebuilt(tmp_path, damage):
    env = {"FXFUSE_CACHE_DIR": str(tmp_path)}
    run_block_child(env, "cuda")
    files = _cubins(tmp_path)
    assert files
    for f in files:
        data = open(f, "rb").read()
        if damage == "truncate_header":
            data = data[:20]
        elif damage == "truncate_payload":
            data = data[:len(data) // 2]
        elif damage == "flip_payload_byte":
            data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
        elif damage == "garbage":
            data = os.urandom(len(data))
        elif damage == "empty":
            data = b""
        elif damage == "wrong_key":
            data = data[:32] + b"0" * 32 + data[64:]
        open(f, "wb").write(data)
    r = run_block_child(env, "cuda")
    assert r["err"] < 2e-2, r
    for f in _cubins(tmp_path):  # rebuilt: whole again
        assert os.path.getsize(f) > 64


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["uncreatable", "proc"])
def test_gpu_unusable_cache_dir_warns_once(where):
    d = {"uncreatable": "/etc/hostname/fxfuse-cache", "proc": "/proc/self/fxfuse-cache"}[where]
    r = run_block_child({"FXFUSE_CACHE_DIR": d}, "cuda")
    assert r["err"] < 2e-2 and r["fused"] >= 1, r
    msgs = [w for w in r["warnings"] + r["stderr"].splitlines() if "cache" in w.lower()]
    assert 1 <= len(msgs) <= 2, msgs  # TORCH_WARN may echo to stderr once as well


@pytest.mark.gpu
def test_gpu_two_processes_compile_same_kernel(tmp_path):
    env = dict(os.environ)
    env.update({"FXFUSE_CACHE_DIR": str(tmp_path), "PYTHONPATH": CHILD_PATH})
    code = _RUN_BLOCK.format(device="cuda")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        r = json.loads(next(l for l in out.splitlines() if l.startswith("RESULT "))[7:])
        assert r["err"] < 2e-2, r
    assert _cubins(tmp_path)
    assert not glob.glob(os.path.join(str(tmp_path), ".*.tmp"))
    r = run_block_child({"FXFUSE_CACHE_DIR": str(tmp_path)}, "cuda")  # entries valid: read back
    assert r["err"] < 2e-2 and r["stats"].get("disk_rebuilds", 0) == 0, r


@pytest.mark.gpu
def test_gpu_threads_share_kernels():
    ins = _inputs("cuda", torch.bfloat16)
    ep2 = fxfuse.rewrite(torch.export.export(Fn(block), tuple(ins)))
    model = ep2.module()
    ref = block(*[t.double() for t in ins])

    def worker(k):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for _ in range(20):
                out = model(*ins)
            s.synchronize()
            for o, r in zip(out, ref):
                e = ((o.double() - r).norm() / r.norm()).item()
                assert e < 2e-2, e

    errors = run_threads(worker)
    assert not errors, errors[:3]


@pytest.mark.gpu
def test_gpu_no_nvrtc_leaves_cuda_chains_unfused_with_one_warning(tmp_path):
    # libcuda itself is needed by torch; only NVRTC is removed here. The pass sees it (the op
    # could only evaluate a chain with ATen, slower than Inductor) and leaves the CUDA chains
    # unfused, with one warning for the process and right answers.
    env = _scrubbed_env() | {"LD_LIBRARY_PATH": os.environ.get("LD_LIBRARY_PATH", ""),
                             "FXFUSE_CACHE_DIR": str(tmp_path / "cubins")}
    r = run_block_child(env, "cuda")
    assert r["device"] == "cuda", r
    assert r["fused"] == 0, r
    assert r["err"] < 2e-2, r
    # Python's warnings, and stderr for anything the op itself would say through TORCH_WARN
    said = [w for w in r["warnings"] if "nvrtc" in w.lower()]
    said += [line for line in r["stderr"].splitlines() if "nvrtc" in line.lower()]
    assert len(said) == 1, said
    assert "left to inductor" in said[0].lower(), said
    assert r["stats"].get("kernels_compiled", 0) == 0 and r["stats"].get("fallbacks", 0) == 0, r
