"""The measured kernel choice (python/fxfuse/autotune.py): its candidates, its disk cache and
random inputs on the CPU; on the GPU, that every candidate computes the chain right and that a
choice is measured once, then read back."""
from __future__ import annotations

import json
import os

import pytest
import torch

import fxfuse._C as C
from fxfuse import autotune

HEAD = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
BIAS_GELU = HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n"


def test_candidates_put_the_heuristic_first():
    c = C.kernel_candidates(BIAS_GELU, 4096, 4096, 4096)
    assert c[0].split()[0] == C.kernel_variant(BIAS_GELU, 4096, 4096, 4096)[0]
    assert len(set(c)) == len(c) and sum(x.startswith("sm90_wgmma") for x in c) == 4
    assert C.kernel_candidates(BIAS_GELU, 8, 4096, 4096)[0].startswith("gemv")
    with pytest.raises(ValueError, match="invalid spec"):
        C.set_kernel_choice("not a spec", 1, 8, 8, 8, "aten")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "cache_dir", lambda: str(tmp_path))
    return tmp_path


def test_store_then_load(cache_dir):
    autotune.store("k" * 64, {"choice": "aten", "times_ms": {"aten": 1.0}})
    assert autotune.load("k" * 64)["choice"] == "aten"
    assert autotune.load("j" * 64) is None  # never measured


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"choice": 3}', '{"choice": "aten", "key": "other"}'])
def test_a_bad_entry_is_measured_again(cache_dir, content):
    path = cache_dir / "autotune" / ("k" * 40 + ".json")
    path.parent.mkdir()
    path.write_text(content)
    assert autotune.load("k" * 64) is None


def test_an_unwritable_cache_costs_only_a_warning(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the cache directory should be: makedirs fails
    monkeypatch.setattr(C, "cache_dir", lambda: str(blocker))
    autotune.store("k" * 64, {"choice": "aten"})
    assert "not stored" in caplog.text
    assert autotune.load("k" * 64) is None


def test_random_inputs_keep_shape_stride_dtype():
    base = torch.empty(4, 1, dtype=torch.bfloat16).expand(4, 6)           # stride 0
    t = torch.empty(6, 4, dtype=torch.float16).t()                        # transposed
    q = torch.empty(3, 5, dtype=torch.int8)
    b = torch.empty(2, 2, dtype=torch.bool)
    out = autotune.random_inputs([base, t, q, b])
    for like, got in zip([base, t, q, b], out):
        assert got.shape == like.shape and got.stride() == like.stride() and got.dtype == like.dtype
    assert out[1].abs().sum() > 0 and out[2].abs().sum() > 0  # not zeros


def test_tune_measures_once_then_reads(cache_dir, monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *_: "fake GPU")
    calls, choices = [], []
    monkeypatch.setattr(autotune, "measure", lambda inputs, spec, sizes: calls.append(sizes) or
                        {"choice": "aten", "times_ms": {"aten": 0.5}, "errors": {}, "sizes": list(sizes)})
    monkeypatch.setattr(C, "set_kernel_choice", lambda *a: choices.append(a))
    like = [torch.empty(64, 32, dtype=torch.bfloat16), torch.empty(32, 16, dtype=torch.bfloat16),
            torch.empty(16, dtype=torch.bfloat16)]
    first = autotune.tune(like, BIAS_GELU, (64, 16, 32, 1))
    second = autotune.tune(like, BIAS_GELU, (64, 16, 32, 1))
    assert (first["source"], second["source"]) == ("measured", "disk")
    assert calls == [(64, 16, 32, 1)]
    assert choices == [(BIAS_GELU, 1, 64, 16, 32, "aten")]  # the stored choice is applied
    [entry] = os.listdir(cache_dir / "autotune")
    assert json.loads((cache_dir / "autotune" / entry).read_text())["choice"] == "aten"


def test_options_and_env_turn_it_on(monkeypatch):
    from fxfuse.pass_driver import Options

    monkeypatch.delenv("FXFUSE_AUTOTUNE", raising=False)
    assert not autotune.enabled(Options().autotune) and autotune.enabled(Options(autotune=True).autotune)
    monkeypatch.setenv("FXFUSE_AUTOTUNE", "1")
    assert autotune.enabled(False)


# ---- GPU -------------------------------------------------------------------------------------

def _gelu_inputs(m, k, n):
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g) / k ** 0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=g)
    ref = torch.nn.functional.gelu(x.double() @ w.double() + b.double(), approximate="tanh")
    return [x, w, b], ref


@pytest.mark.gpu
@pytest.mark.parametrize("m,k,n", [(1000, 776, 520), (4096, 1024, 4096)])
def test_gpu_every_candidate_computes_the_chain(m, k, n, monkeypatch):
    """Each kernel the autotune may pick (Hopper tiles on every epilogue, edge tiles at 1000 x
    520) matches float64, outputs poisoned first, and is really the one launched."""
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    inputs, ref = _gelu_inputs(m, k, n)
    major, minor = torch.cuda.get_device_capability()
    for choice in C.kernel_candidates(BIAS_GELU, m, n, k, 1, f"sm_{major}{minor}") + ["aten"]:
        C.set_kernel_choice(BIAS_GELU, 1, m, n, k, choice)
        before = C.stats()
        y = torch.ops.fxfuse.gemm_chain(inputs, BIAS_GELU)[0]
        torch.cuda.synchronize()
        after = C.stats()
        err = ((y.double() - ref).norm() / ref.norm()).item()
        assert err < 2e-2 and not torch.isnan(y).any(), (choice, err)
        launched = after.get("launches", 0) - before.get("launches", 0)
        assert launched == (0 if choice == "aten" else 1), (choice, before, after)
    C.set_kernel_choice(BIAS_GELU, 1, m, n, k, "")


@pytest.mark.gpu
def test_gpu_tune_measures_then_reads_the_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "cache_dir", lambda: str(tmp_path))
    inputs, _ = _gelu_inputs(2048, 1024, 2048)
    first = autotune.tune(inputs, BIAS_GELU, (2048, 2048, 1024, 1))
    assert first["source"] == "measured" and first["choice"], first
    assert all(t is None or t > 0 for t in first["times_ms"].values())
    assert first["choice"] in first["times_ms"] and first["times_ms"][first["choice"]] == min(
        t for t in first["times_ms"].values() if t is not None)
    second = autotune.tune(inputs, BIAS_GELU, (2048, 2048, 1024, 1))
    assert second["source"] == "disk" and second["choice"] == first["choice"]
    C.set_kernel_choice(BIAS_GELU, 1, 2048, 2048, 1024, "")


@pytest.mark.gpu
def test_gpu_compile_with_autotune_records_the_choice(tmp_path, monkeypatch):
    import fxfuse
    from helpers import MLP

    monkeypatch.setattr(C, "cache_dir", lambda: str(tmp_path))
    model = MLP(256, 1024, "gelu_tanh").to("cuda", torch.bfloat16).eval()
    compiled = fxfuse.compile(model, autotune=True, only_profitable=False, dump_dir=str(tmp_path / "dump"))
    x = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        y, ref = compiled(x), model(x)
    assert ((y.double() - ref.double()).norm() / ref.double().norm()).item() < 2e-2
    plans = [json.loads(p.read_text()) for p in (tmp_path / "dump").rglob("report.json")]
    tuned = [t for p in plans for t in p.get("autotune", [])]
    assert tuned and all(t["choice"] for t in tuned), plans
