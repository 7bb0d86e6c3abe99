"""How many cases of a recorded GPU differential run would have launched a fused kernel, estimated
on the CPU: each sampled case is traced on fake CUDA tensors, the pass fuses it (as the test
does, only_profitable=False), and for every fused chain `_C.kernel_variant` says which kernel
the op picks for its size and whether the op runs it (fast) or evaluates the chain with ATen
(without FXFUSE_FORCE_KERNEL). Aligned operands are assumed, so this is an upper bound.

  python tests/reliability/estimate_kernel_coverage.py RECORD.jsonl EVERY_NTH [sm90-all]

`sm90-all` samples the chunks run with FXFUSE_SM90_ALL_EPILOGUES=1 (set it in the environment
too: codegen reads it once per process). The generator's sizes are the GPU run's, with
FXFUSE_DIFF_HOPPER_SHAPES as there (default 0.3; set 0 for the 2026-11-29 run's records) and the
Hopper-plain rate each record line names (`hopper_plain`; FXFUSE_DIFF_HOPPER_PLAIN, default 0,
for lines without it)."""
from __future__ import annotations

import collections
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "python"), HERE]

import fxfuse._C as C  # noqa: E402
from chain_generator import GenConfig, generate, gpu_config  # noqa: E402
from fused_problems import fused_problems  # noqa: E402

def main(argv: list[str]) -> None:
    warnings.filterwarnings("ignore")
    record, every = argv[0], int(argv[1])
    sm90_all = len(argv) > 2 and argv[2] == "sm90-all"
    def config(row: dict) -> GenConfig:  # the GPU run's (test_differential); a row's own rate wins
        plain = row.get("hopper_plain", float(os.environ.get("FXFUSE_DIFF_HOPPER_PLAIN", "0")))
        return gpu_config(float(os.environ.get("FXFUSE_DIFF_HOPPER_SHAPES", "0.3")), plain)

    rows = [json.loads(line) for line in open(record)]
    seeds = [(s, config(r)) for r in rows if (r["sm90_all_epilogues"] == "1") == sm90_all
             for s in range(r["seeds"][0], r["seeds"][1] + 1)][::every]
    chains, with_kernel, traced = collections.Counter(), 0, 0
    for seed, cfg in seeds:
        try:
            problems = fused_problems(generate(seed, cfg), tag="coverage")
        except Exception:  # noqa: BLE001 - counted, not fatal
            chains["trace_error"] += 1
            continue
        traced += 1
        launches = False
        for spec, m, n, k, b in problems:
            variant, fast = C.kernel_variant(spec, m, n, k, b, "sm_90")
            chains[f"{variant}:{'kernel' if fast else 'aten'}"] += 1
            launches |= fast
        with_kernel += launches
    print(f"sm90_all={sm90_all}: sampled {len(seeds)}, traced {traced}; fused chains by variant {dict(chains)}; "
          f"cases that would launch a kernel: {with_kernel}")


if __name__ == "__main__":
    main(sys.argv[1:])
