"""Where the benchmarks write their JSON: $OUT, or the current folder."""
import os


def out_dir() -> str:
    """$OUT (or the current folder), created first: a missing folder must not lose a table
    measured for minutes (session 12 lost three that way)."""
    d = os.environ.get("OUT") or "."
    os.makedirs(d, exist_ok=True)
    return d
