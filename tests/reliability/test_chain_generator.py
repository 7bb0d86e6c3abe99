"""The generator itself (no fxfuse needed): every case is a valid eager program whose float64
evaluation matches its own dtype within the tolerance the differential test uses, the JSON form
round-trips, and the cases cover what issue 8 asks for."""
from __future__ import annotations

import collections

import torch

from chain_generator import OPS, Case, GenConfig, generate
from diff_harness import compare


def test_cases_are_valid_and_self_consistent():
    stats = collections.Counter()
    for seed in range(300):
        case = generate(seed)
        assert Case.from_json(case.to_json()).source() == case.source()
        ins = case.make_inputs()
        out = case.build()(*ins)
        ref = case.build(reference=True)(*case.reference_inputs(ins))
        # eager against itself through the judge: must pass (sanity of the judge)
        o = compare(case, list(out), list(out), list(ref))
        assert o.ok, (seed, o.detail, case.source())
        stats[case.gemm] += 1
        stats[case.dtype] += 1
        stats.update(n.op for n in case.nodes)
        stats.update(f"store:{i.store}" for i in case.inputs)
        stats.update(f"layout:{i.layout}" for i in case.inputs)
        stats["multi_output"] += len(case.outputs) > 1
        stats["M=1"] += case.dims["M"] == 1
    for must in ("mm", "addmm", "linear", "bmm", "linear3d", "matmul3d", "f32", "bf16", "f16", "store:i8",
                 "layout:t", "multi_output", "M=1", "gelu", "gelu_tanh", "where_pos", "to_D"):
        assert stats[must] > 0, f"300 cases never produced {must}: {stats}"


def test_judge_catches_wrong_results():
    case = generate(11)
    ins = case.make_inputs()
    out = [o.clone() for o in case.build()(*ins)]
    ref = case.build(reference=True)(*case.reference_inputs(ins))
    bad = [o * 1.1 for o in out]
    assert compare(case, bad, out, list(ref)).status == "mismatch"
    nan = [o.clone() for o in out]
    nan[0].view(-1)[0] = float("nan")
    assert compare(case, nan, out, list(ref)).status == "nan_mask"
    assert compare(case, [o.double() for o in out], out, list(ref)).status in ("dtype", "ok") or out[0].dtype == torch.float64


def test_every_table_op_renders():
    for name, op in OPS.items():
        args = [f"a{i}" for i in range(op.arity)]
        assert isinstance(op.render(args, {"c": 1.0, "lo": -1.0, "hi": 1.0}), str), name
