"""Small helpers shared by test folders (tests/conftest.py puts this folder on sys.path)."""
from __future__ import annotations

import threading
from typing import Callable

import torch


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
