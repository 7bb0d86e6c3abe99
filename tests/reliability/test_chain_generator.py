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


def test_judge_excuses_one_threshold_flip_and_no_more():
    """GPU differential seed 30272264: v2 = linear(..) sits 0.024 from the threshold of
    (-v2 > 0) and eager's bf16 addmm on the GPU rounds it across; the fused kernel does not.
    One such element is a flip (excused, counted); a whole row of them is a wrong answer."""
    case = generate(30272264, GenConfig(max_m=300, max_n=300, max_k=600, large_k_prob=0.05))
    assert case.discontinuous
    ins = case.make_inputs()
    out = [o.clone() for o in case.build()(*ins)]
    ref = case.build(reference=True)(*case.reference_inputs(ins))
    flipped = [o.clone() for o in out]
    step = 0.527 if float(flipped[0][7, 17]) == 0 else 0.0
    flipped[0][7, 17] = step
    o = compare(case, flipped, out, list(ref))
    assert o.ok and o.flips == 1, o.detail
    row = [o.clone() for o in out]
    row[0][7] = torch.where(row[0][7] == 0, torch.full_like(row[0][7], 0.527), torch.zeros_like(row[0][7]))
    assert compare(case, row, out, list(ref)).status == "mismatch"


def test_judge_never_excuses_a_spoiled_row_or_column():
    """Under 0.2 % of a large output, but all in one row (or column): not threshold flips."""
    from diff_harness import _excusable_flips

    flips = torch.zeros(600, 300, dtype=torch.bool)
    flips[5, 17] = flips[300, 3] = flips[599, 299] = True
    assert _excusable_flips(flips)                       # three scattered elements
    row = torch.zeros(600, 300, dtype=torch.bool)
    row[7, :] = True                                     # 300 of 180,000 (0.17 %), one row
    assert not _excusable_flips(row)
    col = torch.zeros(600, 300, dtype=torch.bool)
    col[:200, 11] = True
    assert not _excusable_flips(col)
    assert not _excusable_flips(torch.ones(8, 8, dtype=torch.bool))  # too many


def test_every_table_op_renders():
    for name, op in OPS.items():
        args = [f"a{i}" for i in range(op.arity)]
        assert isinstance(op.render(args, {"c": 1.0, "lo": -1.0, "hi": 1.0}), str), name


def test_judge_allows_other_summation_orders_and_no_more():
    """GPU differential seed 30287560 (minimized): rsqrt(|v| + 0.01) of a GEMM value v that
    cancels to ~4e-4 amplifies f32 rounding; eager itself, on the same inputs, errs 3e-5..3e-4
    by the order of K. An output as far off as eager in one of those orders is right; a result
    3x beyond the worst order is not."""
    from diff_harness import K_ORDERS, k_permuted_inputs, other_eager_orders

    case = Case.from_json(GPU_SEED_30287560)
    ins = case.make_inputs()
    build = case.build()
    ref = list(case.build(reference=True)(*case.reference_inputs(ins)))
    err = lambda outs: float((outs[0].double() - ref[0]).norm() / ref[0].norm())  # noqa: E731
    orders = [list(build(*k_permuted_inputs(case, ins, j))) for j in range(1, 40)]
    low = min(orders, key=err)        # an eager sample with a lucky order
    high = list(build(*ins))          # eager in its own order: ~10x the lucky one
    assert err(high) > 3 * err(low) + 1e-5, (err(high), err(low))
    assert compare(case, high, low, ref).status == "mismatch"   # one sample of eager: too tight
    judged = compare(case, high, low, ref, lambda: other_eager_orders(case, build, ins))
    assert judged.ok and judged.reordered == 1, judged.detail
    worst = max(err(list(build(*k_permuted_inputs(case, ins, j)))) for j in range(K_ORDERS))
    noise = torch.randn(ref[0].shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    bad = [(ref[0] + noise * (4 * max(worst, err(high))) * ref[0].norm() / noise.norm()).float()]
    assert compare(case, bad, low, ref, lambda: other_eager_orders(case, build, ins)).status == "mismatch"


GPU_SEED_30287560 = (
    '{"dims": {"B": 1, "K": 205, "M": 8, "N": 292, "S": 1}, "dtype": "f32", "gemm": "addmm", '
    '"inputs": [{"fill": "normal", "layout": "contig", "name": "x0", "scale": 1.0, "shape": ["M", "K"], '
    '"special": null, "store": "D"}, {"fill": "normal", "layout": "contig", "name": "x1", "scale": 2.0, '
    '"shape": ["K", "N"], "special": null, "store": "f8e5m2"}, {"fill": "normal", "layout": "contig", '
    '"name": "x2", "scale": 1.0, "shape": ["M", 1], "special": null, "store": "D"}], "nodes": [{"args": '
    '["x1"], "name": "v0", "op": "to_D", "params": {}, "stage": "prologue_b"}, {"args": ["x2", "x0", "v0"], '
    '"name": "v1", "op": "addmm", "params": {"alpha": -1.25, "beta": -1.0}, "stage": "gemm"}, {"args": '
    '["v1"], "name": "v2", "op": "rsqrt", "params": {}, "stage": "epilogue"}], "notes": "addmm f32 M=8 '
    'N=292 K=205", "outputs": ["v2"], "seed": 30287560}')
