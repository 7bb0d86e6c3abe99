"""The errors of eager in other summation orders for the failing cases of a recorded GPU
differential run (the judge's evidence, DIFFERENTIAL.md): per case printed in a chunk's report,
float32 eager on the CPU in its own order, with the GEMM summed one term at a time
(sequential_gemm.py, the order of a kernel with one accumulator per element) and with K
reversed, each as a relative-norm error against float64. Compare with the fused error the
report quotes. Extra arguments: names of test_regressions.py cases to evaluate the same way
(the minimized cases, which the reports may cut).

  python tests/reliability/order_errors.py tests/reliability/gpu_differential_2026-11-30.jsonl \
      f32_sin_of_a_large_gemm_value
"""
import json
import sys

from chain_generator import Case
from diff_harness import _relnorm, k_permuted_inputs


def report(case: Case) -> None:
    ins = case.make_inputs()
    ref = case.build(reference=True)(*case.reference_inputs(ins))
    err = lambda outs: max(_relnorm(o.double(), r.double()) for o, r in zip(outs, ref))  # noqa: E731
    print(f"seed {case.seed} dims {case.dims}: eager {err(case.build()(*ins)):.3e}  "
          f"sequential {err(case.build(sequential_gemm=True)(*ins)):.3e}  "
          f"K reversed {err(case.build()(*k_permuted_inputs(case, ins, 0))):.3e}")


def main(path: str, regressions: list[str]) -> None:
    for line in open(path):
        row = json.loads(line)
        for text in row["report"].splitlines() if row["failures"] else []:
            text = text.strip()
            if text.startswith("json: "):
                try:
                    report(Case.from_json(text[len("json: "):]))
                except ValueError:  # a report cut at its size limit
                    pass
    if regressions:
        from test_regressions import REGRESSIONS

        for name in regressions:
            report(Case.from_json(REGRESSIONS[name][2]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
