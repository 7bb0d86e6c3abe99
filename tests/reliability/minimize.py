"""Minimize a failing differential case:  python tests/reliability/minimize.py <seed> [route]

Prints the original verdict, the minimized case (source, inputs, JSON for test_regressions.py)
and its verdict. Route: fx (default), export, decomp, compile. Uses the CPU.
FXFUSE_DIFF_SPELLINGS=0: the generator without spelled-out SiLU/GELU, as in the runs recorded
before session 10 (GenConfig.spellings)."""
from __future__ import annotations

import logging
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from chain_generator import (GenConfig, activations_from_env, foreign_operands_from_env, generate,  # noqa: E402
                             spellings_from_env)
from diff_harness import check_case, describe, same_failure, shrink  # noqa: E402


def main(argv: list[str]) -> int:
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    seed = int(argv[1])
    route = argv[2] if len(argv) > 2 else "fx"
    # the CPU differential's cases (test_differential.py)
    case = generate(seed, GenConfig(spellings=spellings_from_env(), foreign_operand_prob=foreign_operands_from_env(),
                                    composite_activations=activations_from_env()))
    o = check_case(case, route)
    print(describe(case, o, route))
    if o.ok:
        return 0
    small = shrink(case, same_failure(route)(case, o))
    print("minimized:\n" + describe(small, check_case(small, route), route))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
