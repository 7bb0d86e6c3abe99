"""Model-compile-time kernel compiles (fxfuse/precompile.py compile_chains): distinct kernels compile in
parallel threads, failures only log, and with autotune the chains are measured one at a time."""
from __future__ import annotations

import threading
import time

from fxfuse.precompile import compile_chains


def _jobs(specs):
    return [(i, spec, [f"meta{i}"]) for i, spec in enumerate(specs)]


def test_distinct_kernels_compile_in_parallel(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 4)  # the thread count must not depend on the runner
    running, peak, lock = [0], [0], threading.Lock()

    def compile_fn(inputs, spec):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1

    t = time.perf_counter()
    compile_chains(_jobs(["a", "b", "c", "d"]), lambda vals: vals, compile_fn, None)
    assert peak[0] >= 2, "the compiles ran one after another"
    assert time.perf_counter() - t < 0.6  # 4 x 0.2 s sequentially


def test_failures_are_logged_and_the_rest_compiles(caplog):
    done = []

    def make_inputs(vals):
        if vals == ["meta1"]:
            raise RuntimeError("no memory for the stand-in inputs")
        return vals

    def compile_fn(inputs, spec):
        if spec == "c":
            raise RuntimeError("NVRTC said no")
        done.append(spec)

    compile_chains(_jobs(["a", "b", "c", "d"]), make_inputs, compile_fn, None)
    assert sorted(done) == ["a", "d"]
    assert "rewrite 1" in caplog.text and "rewrite 2" in caplog.text


def test_tuning_measures_one_chain_at_a_time_then_compiles():
    order, running, peak = [], [0], [0]

    def tune(inputs, spec):
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        running[0] -= 1
        order.append(("tune", spec))
        return {"choice": "aten", "source": "measured"}

    tuned = compile_chains(_jobs(["a", "b", "a"]), lambda vals: vals,
                           lambda inputs, spec: order.append(("compile", spec)), tune)
    assert peak[0] == 1
    assert order == [("tune", "a"), ("compile", "a"), ("tune", "b"), ("compile", "b"), ("tune", "a"),
                     ("compile", "a")]
    assert [t["rewrite"] for t in tuned] == [0, 1, 2] and all(t["choice"] == "aten" for t in tuned)


def test_stand_in_inputs_keep_strides_and_storage_offsets():
    """The op keys kernels and measured choices by base alignment too: a sliced input's
    stand-in must start at the same offset."""
    import torch

    from fxfuse.precompile import empty_like_meta

    qkv = torch.empty(16, 3 * 64, dtype=torch.bfloat16)
    likes = [qkv[:, 64:128], qkv.t(), torch.empty(4, 1, dtype=torch.int8).expand(4, 6)]
    for like, got in zip(likes, empty_like_meta(likes)):
        assert (got.shape, got.stride(), got.storage_offset(), got.dtype) == (
            like.shape, like.stride(), like.storage_offset(), like.dtype)
