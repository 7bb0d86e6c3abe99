"""torch.compile(backend="fxfuse") on CPU (float32, the CPU reference kernel): results vs
eager on fresh inputs, chains counted from fxfuse.stats(), mode/options pass-through, the
pass's uuid, training (the backward graph goes through the pass) and dynamic shapes."""
from __future__ import annotations

import pytest
import torch

import fxfuse
from helpers import Block, GatedMLP, Int8Linear, Linear3d, MLP, rel_err, run_python

TOL = 1e-4


def check(model, *shapes, backend="fxfuse", **compile_kw):
    model.eval()
    compiled = torch.compile(model, backend=backend, **compile_kw)
    with torch.no_grad():
        for _ in range(2):  # fresh inputs each time
            xs = [torch.randn(*s) for s in shapes]
            assert rel_err(compiled(*xs), model(*xs)) < TOL
    return fxfuse.stats()


def test_mlp_gelu():
    s = check(MLP(act="gelu"), (8, 32))
    assert s["gemms_seen"] == 2
    assert s["chains_fused"] == 1            # fc1 + bias + gelu; fc2 is a bare GEMM
    assert s["rejections"].get("no_epilogue_no_prologue") == 1
    (entry,) = fxfuse.report().fused
    assert entry["status"] == "fused"


def test_mlp_relu_by_entry_point_name_string():
    s = check(MLP(act="relu"), (8, 32), backend="fxfuse")
    assert s["chains_fused"] == 1


@pytest.mark.needs_real_pass
def test_transformer_block():
    s = check(Block(), (2, 6, 32))
    assert s["gemms_seen"] >= 6
    assert s["chains_fused"] == 3            # o + residual; fc + gelu_tanh; proj + residual


def test_transformer_block_numbers():
    check(Block(), (2, 6, 32))


def test_gated_mlp(standin):
    s = check(GatedMLP(), (8, 32))
    assert s["gemms_seen"] == 3
    assert s["chains_fused"] >= 1            # w1 + silu (* w3 x)


@pytest.mark.needs_real_pass
def test_int8_weight_only_linear():
    s = check(Int8Linear(), (8, 32))
    assert s["chains_fused"] == 1            # dequant prologue + bias + relu epilogue


def test_int8_weight_only_linear_numbers():
    check(Int8Linear(), (8, 32))


@pytest.mark.needs_real_pass
def test_3d_input():
    s = check(Linear3d(), (2, 5, 32))
    assert s["chains_fused"] == 1


def test_3d_input_numbers():
    check(Linear3d(), (2, 5, 32))


def test_mode_and_options_reach_inductor():
    # torch.compile passes mode=/options= to a custom backend as keywords.
    s = check(MLP(act="relu"), (8, 32), mode="max-autotune-no-cudagraphs")
    assert s["chains_fused"] == 1
    torch._dynamo.reset()
    fxfuse.reset_stats()
    s = check(MLP(act="relu"), (8, 32), options={"fxfuse.min_k": 1, "epilogue_fusion": False})
    assert s["chains_fused"] == 1


def test_cpp_wrapper_leaves_every_chain_to_inductor_named():
    """Inductor's cpp_wrapper=True cannot call the op (it pasted the spec's newlines into C++: the compile
    failed; escaped, it misreads a one-tensor list result and the program crashed): the chains stay
    Inductor's, each GEMM named cpp_wrapper, and the model compiles and runs as eager does."""
    s = check(MLP(act="gelu"), (8, 32), options={"cpp_wrapper": True})
    assert s["chains_fused"] == 0 and s["rejections"].get("cpp_wrapper") == 1, s
    (entry,) = [e for e in fxfuse.report().entries if e["reason"] == "cpp_wrapper"]
    assert "cpp_wrapper=True" in entry["detail"]


def test_cpu_freezing_prepacked_linear_is_named(monkeypatch):
    """Inductor's CPU freezing puts a linear on MKL's / oneDNN's prepacked weights before the pass runs: the
    report said "no GEMM in this graph"; it now names it unsupported_gemm_op (or, where torch keeps addmm,
    the chain fuses). Either way the GEMM is seen and the result is eager's."""
    monkeypatch.setattr(torch._inductor.config, "freezing", True)
    s = check(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU()), (8, 64))
    assert s["gemms_seen"] == 1, s
    named = [e for e in fxfuse.report().entries if e.get("reason") == "unsupported_gemm_op"]
    assert s["chains_fused"] == 1 or any("Inductor's CPU freezing" in e["detail"] for e in named), fxfuse.report()


def test_fxfuse_compile_and_backend_with(tmp_path):
    model = MLP(act="relu").eval()
    compiled = fxfuse.compile(model, mode="default", dump_dir=str(tmp_path))
    x = torch.randn(8, 32)
    with torch.no_grad():
        assert rel_err(compiled(x), model(x)) < TOL
    assert fxfuse.stats()["chains_fused"] == 1 and any(tmp_path.iterdir())
    torch._dynamo.reset()
    fxfuse.reset_stats()
    with torch.no_grad():
        out = torch.compile(model, backend=fxfuse.backend_with(mode="max-autotune-no-cudagraphs"))(x)
    assert rel_err(out, model(x)) < TOL and fxfuse.stats()["chains_fused"] == 1


def test_disabled_and_bad_options():
    s = check(MLP(act="relu"), (8, 32), backend=fxfuse.backend_with(enabled=False))
    assert s["chains_fused"] == 0 and s["graphs_seen"] == 0
    with pytest.raises(TypeError):
        fxfuse.backend_with(no_such_option=1)
    with pytest.raises(RuntimeError):
        fxfuse.backend_with(options={"no_such_inductor_key": 1})


def test_uuid_tracks_options_and_library():
    a, b = fxfuse.FxfusePass(), fxfuse.FxfusePass(fxfuse.Options(min_k=64))
    assert a.uuid() == fxfuse.FxfusePass().uuid() and a.uuid() != b.uuid()
    assert fxfuse.FxfusePass(fxfuse.Options(dump_dir="/tmp/x")).uuid() == a.uuid()
    from torch._inductor.custom_graph_pass import CustomGraphPass

    assert isinstance(a, CustomGraphPass)


def _train_step_matches_eager(make_model, compile_fn, x):
    """One training step of compile_fn(model) against eager on a copy: the input's and every parameter's gradient."""
    model, ref_model = make_model(), make_model()
    ref_model.load_state_dict(model.state_dict())
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    compile_fn(model)(x1).square().sum().backward()
    ref_model(x2).square().sum().backward()
    assert rel_err(x1.grad, x2.grad) < TOL
    for p, q in zip(model.parameters(), ref_model.parameters()):
        assert rel_err(p.grad, q.grad) < TOL


def test_training_backward_goes_through_the_pass():
    _train_step_matches_eager(lambda: MLP(act="relu"), lambda m: torch.compile(m, backend="fxfuse"), torch.randn(8, 32))
    labels = [title for title, _, _ in fxfuse.report().graphs]
    assert labels == ["forward", "backward"], labels


class _MlpBlock3d(torch.nn.Module):
    """A transformer MLP on [B, S, D] activations: fc, GELU(tanh), proj, residual."""

    def __init__(self, d=32):
        super().__init__()
        self.fc, self.proj = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return self.proj(torch.nn.functional.gelu(self.fc(x), approximate="tanh")) + x


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "left_unfused"])
def test_training_fuses_a_3d_linear_whose_product_is_saved(fuse):
    """In training the forward graph saves a 3-D linear's product for the backward, so its view back to [B, S, N]
    was not the product's one user and nothing fused (session 57): the backend reads the saved product through that
    view (python/fxfuse/linear_output_views.py), the chain takes the views and gives the product as an extra output.
    Forward and backward must be eager's; with nothing fused (epilogues and prologues off) the rerouted graph must
    still be."""
    _train_step_matches_eager(_MlpBlock3d, lambda m: fxfuse.compile(m, only_profitable=False, epilogue=fuse,
                                                                     prologue=fuse), torch.randn(2, 8, 32))
    forward = fxfuse.report().graphs[0]
    assert forward[0] == "forward"
    fused = [line for line in str(fxfuse.report()).splitlines() if ": fused" in line]
    if fuse:  # both 3-D linears: fc + GELU (its product saved), proj + the residual
        assert sum(line.strip().startswith("addmm") for line in fused) == 2 and any("tanh" in line for line in fused), \
            str(fxfuse.report())
    else:
        assert fxfuse.stats()["chains_fused"] == 0


class _ProductReadBeforeItsView(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(32, 64) / 8)
        self.fc = torch.nn.Linear(32, 64)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        p = x.reshape(-1, 32) @ self.w
        t = p.sum(0)  # reads the 2-D product before its view back to [B, S, N]
        y = p.view(x.shape[0], x.shape[1], 64)
        return torch.relu(y + 1.0) * 2 + t + h


@pytest.mark.needs_real_pass
def test_a_product_read_before_its_view_is_not_rerouted(recwarn):
    """Rerouting such a product's users through the later view left a user before its operand: the pass failed on
    the whole graph (review, session 57), and the graph's other chain (fc + ReLU) went unfused with it."""
    _train_step_matches_eager(_ProductReadBeforeItsView, lambda m: fxfuse.compile(m, only_profitable=False),
                              torch.randn(2, 8, 32))
    forward = str(fxfuse.report()).split("fxfuse report: backward")[0]
    assert ": fused" in forward and "relu" in forward, forward
    assert not [w for w in recwarn if "fxfuse" in str(w.message)], [str(w.message) for w in recwarn]


def test_dynamic_batch_one_graph():
    model = MLP(act="relu").eval()
    compiled = torch.compile(model, backend="fxfuse", dynamic=True)
    with torch.no_grad():
        for m in (3, 8, 17):
            x = torch.randn(m, 32)
            assert rel_err(compiled(x), model(x)) < TOL
    s = fxfuse.stats()
    assert s["graphs_seen"] == 1 and s["chains_fused"] == 1




# Run in a child: conftest forces Inductor's caches off through the environment, which no config
# patch can override in this process.
_CACHED_COMPILE = r"""
import torch, fxfuse
from helpers import MLP, rel_err
model = MLP(act="relu").eval()
seen = []
with torch.no_grad():
    for _ in range(2):
        torch._dynamo.reset()
        fxfuse.reset_stats()
        compiled = torch.compile(model, backend=BACKEND)
        x = torch.randn(8, 32)
        assert rel_err(compiled(x), model(x)) < 1e-4
        s = fxfuse.stats()
        seen.append((s["chains_fused"], s["graphs_seen"], s["graphs_from_inductor_cache"], str(fxfuse.report())))
print(repr(seen))
"""


@pytest.mark.needs_real_pass
def test_graph_from_inductors_cache_is_counted_and_reported(tmp_path):
    # With Inductor's caches on (their default outside these tests), a second compile of the
    # same graph is served from the cache and the pass does not run: the stats and the report
    # must say so instead of reading "0 fused".
    import ast

    out = run_python(_CACHED_COMPILE.replace("BACKEND", '"fxfuse"'), timeout=300, env={
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    (fused0, seen0, cached0, report0), (fused1, seen1, cached1, report1) = ast.literal_eval(
        out.stdout.strip().splitlines()[-1])
    assert (fused0, seen0, cached0) == (1, 1, 0) and "Inductor's cache" not in report0
    assert (fused1, seen1, cached1) == (0, 0, 1)
    assert "1 graph(s) came from Inductor's cache" in report1 and "no graph was compiled" not in report1


_CACHED_ROUNDS = r"""
import torch, fxfuse
def decimals(x, w):
    return torch.round(x @ w.t(), decimals=1)
def own_steps(x, w):
    y = x @ w.t()
    return torch.round(y * 10.0) * 0.1
g = torch.Generator().manual_seed(SEED)
x = (torch.randn(64, 64, generator=g, dtype=torch.float64) * torch.tensor([0.01, 1.0, 40.0, 3000.0]).repeat(16))
x = x.to(torch.bfloat16)
w = torch.eye(64, dtype=torch.bfloat16)
out = []
for f in (decimals, own_steps, decimals):
    torch._dynamo.reset()
    fxfuse.reset_stats()
    got = fxfuse.compile(f, only_profitable=False)(x, w)
    out.append((f.__name__, int((got != f(x, w)).sum()), fxfuse.stats()["graphs_from_inductor_cache"]))
print(repr(out))
"""


@pytest.mark.needs_real_pass
def test_inductors_cache_tells_round_decimals_from_the_users_own_steps(tmp_path):
    """After Inductor's decompositions, round(y, decimals=1) and a user's own round(y * 10) * 0.1 are the same graph
    code; the pass tells them apart by the nodes' provenance, which Inductor's cache key does not see, so each was
    served the other's compiled graph (review, session 57: 239 of 4,096 bf16 elements off eager). The pass's uuid
    now carries the Dynamo graph's code: the second program misses, the same program again hits."""
    import ast

    import testlib

    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=testlib.generator("cpu", "cached_rounds")))
    out = run_python(_CACHED_ROUNDS.replace("SEED", str(seed)), timeout=300, env={
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    (n0, off0, cached0), (n1, off1, cached1), (n2, off2, cached2) = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert (off0, off1, off2) == (0, 0, 0), out.stdout
    assert (cached0, cached1, cached2) == (0, 0, 1), out.stdout


@pytest.mark.parametrize("mode", ["subprocess", "async+subprocess"])
def test_inductors_subprocess_compile_mode_still_runs_the_pass(mode):
    """Under TORCHINDUCTOR_FX_COMPILE_MODE=subprocess Inductor compiled in a child process from a portable copy of its
    config, which leaves out custom post-grad passes: nothing fused, and the report called the graph a cache hit
    (session 59's hunt). The backend compiles in-process; training's backward graph too."""
    code = (
        "import torch, fxfuse\n"
        "m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16))\n"
        "x = torch.randn(8, 32, requires_grad=True)\n"
        "y = torch.compile(m, backend='fxfuse')(x)\n"
        "y.sum().backward()\n"
        "ref = x.detach().clone().requires_grad_(True)\n"
        "m(ref).sum().backward()\n"
        "assert (y - m(x)).abs().max().item() < 1e-4 and (x.grad - ref.grad).abs().max().item() < 1e-4\n"
        "s = fxfuse.stats()\n"
        "print(s['chains_fused'], s.get('graphs_from_inductor_cache', 0))\n")
    r = run_python(code, env={"TORCHINDUCTOR_FX_COMPILE_MODE": mode, "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
                              "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"})
    assert r.returncode == 0, r.stderr[-3000:]
    fused, cached = map(int, r.stdout.split()[-2:])
    assert fused == 2 and cached == 0, r.stdout  # the forward's chain and the backward's



@pytest.mark.needs_real_pass
def test_a_disabled_backend_claims_no_cached_graph(tmp_path):
    """With enabled=False the pass counts no graph, and the backend took a cached second compile for one whose chains
    were hidden ("their chains are not listed"): with the pass off there are none (session 59's hunt)."""
    import ast

    out = run_python(_CACHED_COMPILE.replace("BACKEND", "fxfuse.backend_with(enabled=False)"), timeout=300, env={
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    for fused, seen, cached, report in ast.literal_eval(out.stdout.strip().splitlines()[-1]):
        assert (fused, seen, cached) == (0, 0, 0) and "Inductor's cache" not in report, report
