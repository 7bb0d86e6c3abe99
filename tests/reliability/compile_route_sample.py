"""The differential's compile route (torch.compile(fn, backend="fxfuse")) on generated cases that
have a SiLU or GELU, composite or spelled out: the route where Inductor hands the pass the
decompositions. CPU; slow (an Inductor compile per case), so a sample, not a CI test.

  python tests/reliability/compile_route_sample.py FIRST_SEED CASES

Prints each failure (describe) and the totals; exit status 1 if any case failed."""
from __future__ import annotations

import collections
import logging
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from chain_generator import GenConfig, generate, spellings_from_env  # noqa: E402
from diff_harness import check_case, describe  # noqa: E402

ACTIVATIONS = ("silu", "gelu", "gelu_tanh")


def main(argv: list[str]) -> int:
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    first, wanted = int(argv[1]), int(argv[2])
    cfg = GenConfig(max_epilogue_ops=4, spellings=spellings_from_env())
    results, n, t0, seed = collections.Counter(), 0, time.time(), first
    while n < wanted:
        case = generate(seed, cfg)
        seed += 1
        if not any(node.op in ACTIVATIONS for node in case.nodes):
            continue
        o = check_case(case, "compile", "cpu")
        results[o.status] += 1
        n += 1
        if not o.ok:
            print(describe(case, o, "compile"), flush=True)
    print(f"compile route: {n} cases with activations (seeds {first}..{seed - 1}): {dict(results)}, "
          f"{time.time() - t0:.0f} s")
    return 0 if all(s.startswith("ok") for s in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
