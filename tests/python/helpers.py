"""Shared test helpers: models, error metric, and running Python in a fresh process with
the same ``fxfuse._C`` (real extension or the test stand-in) as this one."""
from __future__ import annotations

import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-12)).item()


def run_python(code: str, *args: str, timeout: int = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter; ``fxfuse`` is importable there the same way. ``env``:
    variables set there on top of this process's environment."""
    # Whether fxfuse._C is the stand-in (what tests/python/conftest.py installed). Not
    # `import conftest`: with tests/reliability collected too, that name is its conftest.
    standin = bool(getattr(sys.modules.get("fxfuse._C"), "STANDIN", False))
    prelude = "import sys\n"
    if standin:  # the real extension: a plain `import fxfuse` there, nothing injected
        prelude += "import _standin\n_standin.install(force=True)\n"
    child_env = dict(os.environ, **(env or {}))  # FXFUSE_TEST_PASS carries over
    child_env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), HERE, child_env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", prelude + code, *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env, cwd=HERE)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return run_python("from fxfuse.cli import main\nsys.exit(main(sys.argv[1:]))", *args)


class MLP(nn.Module):
    def __init__(self, d=32, h=64, act="gelu"):
        super().__init__()
        self.fc1, self.fc2, self.act = nn.Linear(d, h), nn.Linear(h, d), act

    def forward(self, x):
        y = self.fc1(x)
        acts = {"gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "relu": F.relu, "relu6": F.relu6}
        return self.fc2(acts[self.act](y))


class Block(nn.Module):
    """A small pre-LN transformer block (attention q/k/v/o, GELU MLP, residuals)."""

    def __init__(self, d=32, heads=2):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        y = self.ln1(x)
        q, k, v = (m(y).view(b, t, self.h, d // self.h).transpose(1, 2) for m in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.o(a)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GatedMLP(nn.Module):
    def __init__(self, d=32, h=64):
        super().__init__()
        self.w1, self.w3, self.w2 = nn.Linear(d, h, bias=False), nn.Linear(d, h, bias=False), nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Int8Linear(nn.Module):
    """Weight-only int8 linear: ``x @ (w_i8 * scale[:, None]).T + b``, then ReLU."""

    def __init__(self, d=32, n=48):
        super().__init__()
        self.register_buffer("w", torch.randint(-127, 127, (n, d), dtype=torch.int8))
        self.register_buffer("s", torch.rand(n) * 0.02)
        self.b = nn.Parameter(torch.randn(n))

    def forward(self, x):
        w = self.w.to(x.dtype) * self.s.to(x.dtype).unsqueeze(1)
        return F.relu(F.linear(x, w, self.b))


class Linear3d(nn.Module):
    def __init__(self, d=32, n=48):
        super().__init__()
        self.l = nn.Linear(d, n)

    def forward(self, x):
        return torch.relu(self.l(x)) * 0.5


class ScaledByCpuScalar(torch.nn.Module):
    """`relu((x @ w.t() + b) * s)` with `s` a 0-d CPU tensor next to CUDA tensors: eager accepts it."""

    def __init__(self, w, b):
        super().__init__()
        self.register_buffer("w", w)
        self.register_buffer("b", b)

    def forward(self, x, s):
        return torch.relu((torch.nn.functional.linear(x, self.w) + self.b) * s)


class GemmThen(nn.Module):
    """`f(x @ w.t())`: a GEMM and a one-operand epilogue `f`."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x, w):
        return self.f(x @ w.t())


def run_the_generated_kernel(monkeypatch):
    """On CUDA, the generated kernel rather than the op's ATen path (FXFUSE_FORCE_KERNEL), its outputs poisoned first
    (an element the kernel does not write is NaN, not stale)."""
    monkeypatch.setenv("FXFUSE_FORCE_KERNEL", "1")
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")


class EpilogueOf(nn.Module):
    """`f(x @ w.t(), r)`: a GEMM and an epilogue `f` reading one more operand `r`."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x, w, r):
        return self.f(x @ w.t(), r)


def exact_gemm_inputs(dtype, device, g, m=32, k=16, n=64):
    """x [m, k], w [n, k] whose product `x @ w.t()` every GEMM computes exactly: multiples of 1/128 in [0.25, 2)
    times {+-1, +-2, 0.5, 0.25} (at most 17 bits for k <= 64, exact in fp32), so that a fused kernel's y and
    cuBLAS's are the same bits and an epilogue's answer can be compared with eager's bit for bit."""
    x = torch.randint(32, 256, (m, k), generator=g).to(dtype) / 128
    levels = torch.tensor([1.0, -1.0, 2.0, -2.0, 0.5, 0.25])
    w = levels[torch.randint(0, len(levels), (n, k), generator=g)].to(dtype)
    return x.to(device), w.to(device)


def rows_gemm(first_rows, dtype, device, g, m=32, k=16, n=64):
    """x, w with y = x @ w.t() of m x n whose row i is first_rows[i] (then random multiples of 1/16 in [0.5, 2)),
    exactly: x's first column holds the values and w reads only that column, times 1 (inf and NaN rows too)."""
    rest = (torch.randint(8, 32, (m,), generator=g) / 16).tolist()
    x = torch.zeros(m, k, dtype=dtype)
    x[:, 0] = torch.tensor((list(first_rows) + rest)[:m]).to(dtype)
    w = torch.zeros(n, k, dtype=dtype)
    w[:, 0] = 1
    return x.to(device), w.to(device)


def fused_run(model, args, path, absent=""):
    """model(*args) with its one GEMM chain fused: by torch.export + fxfuse.rewrite (exactly one fused op in the
    program, and no target containing `absent` beside it where given), or by the torch.compile backend (one chain
    fused). Every chain legal is fused (only_profitable=False)."""
    import fxfuse

    if path == "export":
        ep = fxfuse.rewrite(torch.export.export(model, tuple(args)), only_profitable=False)
        targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
        assert targets.count("fxfuse.gemm_chain.default") == 1, targets
        assert not absent or not any(absent in t for t in targets), targets
        return ep.module()(*args)
    torch._dynamo.reset()
    fxfuse.reset_stats()
    got = fxfuse.compile(model, only_profitable=False)(*args)
    assert fxfuse.stats()["chains_fused"] == 1, str(fxfuse.report())
    return got


def check_op_path(ep, before: dict, after: dict, path: str, fast: bool) -> None:
    """Two calls of a rewritten program ran as its path says (fxfuse.stats() before and after): the kernel launched
    where it is forced (`path == "kernel"`) or a fast kernel takes the chain, ATen's dispatch elsewhere, where the
    default rewrite (the report on `ep`) leaves the chain unfused as not_profitable."""
    import fxfuse
    counter = "launches" if path == "kernel" or fast else "aten_dispatch"
    assert after[counter] >= before[counter] + 2, (before, after)
    if path == "dispatch" and not fast:
        (entry,) = fxfuse.report(ep).entries
        assert entry["reason"] == "not_profitable", entry


def run_gemv_child(code: str, *args, knob: str) -> None:
    """A child process's check of a gemv path whose knob (`knob`, read once per process) the caller may have set:
    the child runs with it unset, strict (a silent ATen fallback fails) and with poisoned outputs; it prints "ok"."""
    out = run_python(code, *map(str, args), timeout=300,
                     env={knob: "", "FXFUSE_STRICT": "1", "FXFUSE_POISON_OUTPUTS": "1", "PYTHONPATH": os.path.dirname(HERE)})
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr


def strict_cuda_path(monkeypatch, path: str) -> None:
    """A CUDA test's environment: strict (a silent ATen fallback, a kernel that failed to build, fails), poisoned
    outputs (an element left unwritten reads NaN), and the kernel forced where `path == "kernel"` (the generic kernel
    launched where the op's dispatch would run ATen), the op's own dispatch otherwise."""
    monkeypatch.setenv("FXFUSE_STRICT", "1")
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    if path == "kernel":
        monkeypatch.setenv("FXFUSE_FORCE_KERNEL", "1")
    else:
        monkeypatch.delenv("FXFUSE_FORCE_KERNEL", raising=False)
