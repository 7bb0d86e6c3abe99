"""The benchmarks' timers, without a GPU (CUDA events, the spin and synchronize are stand-ins):
bench/bench_decode.py interleaves the variants' batches (batch j of every variant before batch
j + 1 of any) and times one batch again behind a longer spin where the host fell behind;
bench/bench_chains.py's rounds (also backend_rule_check's) discard the first and drop a variant
that raises."""
from __future__ import annotations

import sys

import pytest
import torch

@pytest.fixture
def bench_decode(bench_module):
    return bench_module("bench_decode")


@pytest.fixture
def bench_chains(bench_module):
    return bench_module("bench_chains")


def test_rounds_discard_the_first_and_drop_a_variant_that_raises(bench_chains, monkeypatch):
    calls = []

    def timer(fns, reps, failures=None):  # round r's times: r + 1 for "a", 10 * (r + 1) for "b"
        calls.append(sorted(fns))
        r = len(calls)
        if r == 2:
            failures["c"] = "RuntimeError: replay failed"
        return {n: [float(r if n == "a" else 10 * r)] * reps for n in fns if n not in failures}

    monkeypatch.setattr(bench_chains, "time_interleaved", timer)
    failures = {}
    med, samples = bench_chains.round_robin({"a": None, "b": None, "c": None}, rounds=3, reps=5, failures=failures)
    assert len(calls) == 4  # one round not kept, then three
    assert samples == {"a": [2.0, 3.0, 4.0], "b": [20.0, 30.0, 40.0]} and med == {"a": 3.0, "b": 30.0}
    assert failures == {"c": "RuntimeError: replay failed"}


def test_batches_interleave_and_a_caught_up_batch_is_timed_again(bench_decode, monkeypatch):
    log, caught_up_once = [], {"b": True}

    class Event:
        def __init__(self, enable_timing):
            self.t = 0.0

        def record(self):
            self.t = float(len(log))

        def query(self):  # the GPU reached the start event before the host queued the batch
            name = log[-1][0]
            if caught_up_once.get(name):
                caught_up_once[name] = False
                return True
            return False

        def elapsed_time(self, end):
            return end.t - self.t

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    spins = []
    monkeypatch.setattr(bench_decode, "gpu_sleep", lambda ms: spins.append(ms))
    sets = [(1,), (2,)]
    fns = {n: (lambda v, n=n: log.append((n, v))) for n in ("a", "b", "c")}
    times = bench_decode.rotated_ms_each(fns, sets, batches=2)
    assert set(times) == {"a", "b", "c"}
    calls = 2 * (60 // 2)  # arg sets times calls per set in one batch
    timed = log[3 * (len(sets) + calls):]  # after each variant's warm-up and spin estimate
    batches = [timed[i][0] for i in range(0, len(timed), calls)]
    # b's first batch was caught up by the GPU: timed again in the next pass, behind a 4x spin
    assert batches == ["a", "b", "c", "a", "b", "c", "b"], batches
    assert all(v == sets[i % 2][0] for i, (_, v) in enumerate(timed[:calls]))  # rotating over the sets
    assert spins[1] * 4 == spins[4]  # b: its retry's spin 4x the first
