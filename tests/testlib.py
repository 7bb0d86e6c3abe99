"""Small helpers shared by test folders (tests/conftest.py puts this folder on sys.path)."""
from __future__ import annotations

import os
import threading
import zlib
from typing import Callable

import torch


def _run_seed() -> int:
    """This run's random base seed: FXFUSE_TEST_SEED where set (to repeat a run), else drawn fresh and put
    in the environment, so that pytest-xdist's workers and the tests' child processes, which inherit it,
    draw from the same run seed."""
    given = os.environ.get("FXFUSE_TEST_SEED", "")
    if given:
        if not given.strip().isdigit():
            raise ValueError(f"FXFUSE_TEST_SEED must be a non-negative integer, not {given!r}")
        return int(given) & 0x7FFFFFFF  # what torch.manual_seed takes, in every child too
    drawn = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
    os.environ["FXFUSE_TEST_SEED"] = str(drawn)
    return drawn


RUN_SEED = _run_seed()


def seed_for(*parts) -> int:
    """A seed that differs per run (RUN_SEED) and per `parts` (a test's name, a case's parameters): fresh
    random inputs each run, and one run repeatable with FXFUSE_TEST_SEED."""
    return (RUN_SEED ^ zlib.crc32(repr(parts).encode())) & 0x7FFFFFFF


def seed(*parts) -> None:
    """Seeds torch's global generators (CPU and every CUDA device) with seed_for(*parts)."""
    torch.manual_seed(seed_for(*parts))


def generator(device: str, *parts) -> torch.Generator:
    """A generator on `device` seeded with seed_for(*parts)."""
    return torch.Generator(device=device).manual_seed(seed_for(*parts))


class Fn(torch.nn.Module):
    """A plain function as a module, for torch.export."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def run_threads(worker: Callable[[int], None], n: int = 8) -> list[str]:
    """Runs worker(0..n-1) on n threads at once; returns one line per thread that raised."""
    errors: list[str] = []

    def guarded(k: int) -> None:
        try:
            worker(k)
        except Exception as e:  # noqa: BLE001 - reported to the test, which asserts on it
            errors.append(f"thread {k}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
