"""The generator itself (no fxfuse needed): every case is a valid eager program whose float64
evaluation matches its own dtype within the tolerance the differential test uses, the JSON form
round-trips, and the cases cover what issue 8 asks for."""
from __future__ import annotations

import collections
import dataclasses

import torch

import testlib
from chain_generator import COMPOSITE_EPILOGUE, OPS, SPELLINGS, Case, GenConfig, generate, gpu_config
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


def test_hopper_plain_cases_reach_the_hopper_kernel_as_they_are():
    """hopper_plain_prob: 16-bit operands with no prologue at Hopper sizes, the epilogue random
    (the GPU run's way to put random epilogues on the Hopper kernel); valid like every case."""
    cfg = GenConfig(max_m=300, max_n=300, max_k=600, hopper_plain_prob=1.0)
    base = testlib.seed_for("hopper_plain") % 100_000_000  # new cases each run
    for seed in range(base, base + 40):
        case = generate(seed, cfg)
        assert case.dtype in ("bf16", "f16") and case.gemm in ("mm", "addmm", "linear"), case.source()
        M, N, K = case.dims["M"], case.dims["N"], case.dims["K"]
        assert M >= 128 and 128 <= N <= 768 and N % 8 == 0 and K % 8 == 0, case.dims
        assert any(n.stage == "epilogue" for n in case.nodes), case.source()
        assert not [n for n in case.nodes if n.stage.startswith("prologue")], case.source()
        gemm_args = {a for n in case.nodes if n.stage == "gemm" for a in n.args}
        operands = [i for i in case.inputs if i.name in gemm_args]
        assert len(operands) >= 2 and all(i.store == "D" and i.layout == "contig" for i in operands), case.source()
        ins = case.make_inputs()
        out = case.build()(*ins)
        ref = case.build(reference=True)(*case.reference_inputs(ins))
        assert compare(case, list(out), list(out), list(ref)).ok, (seed, case.source())



def test_hopper_decode_cases_are_split_k_sizes():
    """hopper_decode_prob: Hopper-plain cases at decode sizes with a long K (the differential's way
    to put random epilogues on the split-K tile): one 48-64-row tile, K >= 8192; with
    hopper_decode_wide_n 32-40 column tiles of 128, where sm90::splitKForFewTiles takes KS = 2
    since session 17 (CTest SplitK.HeuristicTakesItForOneLongRowTile), without it N of 128-768 (the
    chunks recorded before). The narrow ones are built and judged like every case; the wide ones
    only sized (a float64 reference of a 14336 x 5120 weight is too slow for the CPU suite)."""
    for wide_n in (False, True):
        cfg = GenConfig(max_m=300, max_n=300, max_k=600, hopper_plain_prob=1.0, hopper_decode_prob=1.0,
                        hopper_decode_wide_n=wide_n)
        base = testlib.seed_for("hopper_decode", wide_n) % 100_000_000  # new cases each run
        for seed in range(base, base + 12):
            case = generate(seed, cfg)
            assert case.dtype in ("bf16", "f16") and case.gemm in ("mm", "addmm", "linear"), case.source()
            M, N, K = case.dims["M"], case.dims["N"], case.dims["K"]
            assert 48 <= M <= 64 and 8192 <= K <= 14336 and K % 8 == 0 and N % 8 == 0, case.dims
            if wide_n:
                assert 32 <= (N + 127) // 128 <= 40, case.dims
                continue
            assert 128 <= N <= 768, case.dims
            ins = case.make_inputs()
            out = case.build()(*ins)
            ref = case.build(reference=True)(*case.reference_inputs(ins))
            assert compare(case, list(out), list(out), list(ref)).ok, (seed, case.source())


def test_hopper_decode_two_tile_cases_are_two_row_tiles():
    """hopper_decode_two_tiles_prob: the decode cases at two 64-row tiles (96-128 rows), where
    session 15's sm90::splitKForDecode took KS = 2 (session 16's recorded chunks 540-554 drew
    them); valid like every case."""
    cfg = GenConfig(max_m=300, max_n=300, max_k=600, hopper_plain_prob=1.0, hopper_decode_prob=1.0,
                    hopper_decode_two_tiles_prob=1.0)
    base = testlib.seed_for("two_tiles") % 100_000_000  # new cases each run
    for seed in range(base, base + 8):
        case = generate(seed, cfg)
        M, N, K = case.dims["M"], case.dims["N"], case.dims["K"]
        assert 96 <= M <= 128 and 8192 <= K <= 14336 and 128 <= N <= 768, case.dims
        ins = case.make_inputs()
        out = case.build()(*ins)
        ref = case.build(reference=True)(*case.reference_inputs(ins))
        assert compare(case, list(out), list(out), list(ref)).ok, (seed, case.source())


# Seeds reproduce recorded runs (tests/reliability/*.jsonl name seeds, not cases): the cases of
# the default config and of the GPU run's are pinned by a hash of their JSON (session 6, before
# hopper_plain_prob existed; a change that moves the random stream fails here). The runs before
# session 10 had no spelled-out SiLU / GELU (spellings=False reproduces them); the spellings draw
# from their own stream, so with them off every case is what it was, and with them on (the
# default since) only the spelled ops differ.
def _digest(cfg):
    import hashlib

    h = hashlib.sha256()
    for seed in range(200):
        h.update(generate(seed, cfg).to_json().encode())
    return h.hexdigest()[:16]


def test_existing_seeds_still_give_the_same_cases():
    gpu = dict(max_m=300, max_n=300, max_k=600, large_k_prob=0.05, hopper_shape_prob=0.3)
    assert _digest(GenConfig(spellings=False)) == PINNED_DEFAULT
    assert _digest(GenConfig(spellings=False, **gpu)) == PINNED_GPU
    assert _digest(GenConfig()) == PINNED_DEFAULT_SPELLED


def test_spellings_change_only_the_spelled_ops():
    for seed in range(300):
        plain, spelled = generate(seed, GenConfig(spellings=False)), generate(seed, GenConfig())
        for a, b in zip(plain.nodes, spelled.nodes, strict=True):
            assert (a.op, a.args) == (b.op, b.args), seed
            assert a.params == {k: v for k, v in b.params.items() if k != "form"}, seed
            assert "form" not in b.params or b.op in SPELLINGS, seed
        assert plain.inputs == spelled.inputs and plain.outputs == spelled.outputs, seed


def test_composite_activations_are_drawn_only_when_asked():
    """GenConfig.composite_activations adds session 56's activations to the unary ops; without it no case has one
    (the pinned digests above hold the runs recorded before)."""
    new_ops = {op for op, _ in COMPOSITE_EPILOGUE}
    drawn = [{n.op for n in generate(seed, GenConfig(composite_activations=True)).nodes} & new_ops for seed in range(300)]
    assert set().union(*drawn) == new_ops
    assert not any({n.op for n in generate(seed, GenConfig()).nodes} & new_ops for seed in range(300))


PINNED_DEFAULT = "f5e6b206ead3f1a8"
PINNED_GPU = "34b331df0e6815fb"
PINNED_DEFAULT_SPELLED = "392377314fd95dea"


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


def test_judge_excuses_overflow_at_the_threshold_and_nowhere_else():
    """GPU differential seed 30308239 (session 11): f16 `v5 * v5**2` after a GEMM; at [7, 100]
    the float64 value is -65467, eager's -65504 and the kernel's -inf (its K order rounded the
    GEMM's result one f16 step further out). Overflow within rounding of the largest f16 is a
    threshold flip; anything else about an Inf is a wrong answer: the wrong sign, a NaN, a finite
    value far from the threshold, a float64 value outside the window, or many such elements."""
    # the session-11 run's generator: no composite activations (GenConfig.composite_activations)
    case = generate(30308239, dataclasses.replace(gpu_config(0.3, 0.5), composite_activations=False))
    assert case.dims == {"M": 32, "N": 154, "K": 495, "B": 3, "S": 4} and case.dtype == "f16"
    ins = case.make_inputs()
    out = [o.clone() for o in case.build()(*ins)]
    ref = list(case.build(reference=True)(*case.reference_inputs(ins)))
    r = ref[0].double()
    near = ((r.abs() / 65504 - 1).abs() < 0.002) & torch.isfinite(out[0])
    far = (r.abs() < 100) & torch.isfinite(out[0])
    assert near.any() and far.any()
    i = tuple(near.nonzero()[0].tolist())
    sign = torch.sign(r[i]).item()

    def judged(fused_value, eager_value=None, ref0=None):
        fused, eager = [o.clone() for o in out], [o.clone() for o in out]
        fused[0][i] = fused_value
        if eager_value is not None:
            eager[0][i] = eager_value
        return compare(case, fused, eager, [ref0 if ref0 is not None else ref[0]] + ref[1:])

    o = judged(sign * float("inf"))
    assert o.ok and o.flips == 1, o.detail                      # the GPU run's element
    o = judged(float(out[0][i]), eager_value=sign * float("inf"))
    assert o.ok and o.flips == 1, o.detail                      # the other way round
    assert judged(-sign * float("inf")).status == "inf_mask"    # the wrong sign
    assert judged(float("nan"), eager_value=sign * float("inf")).status == "nan_mask"
    assert judged(sign * 12345.0, eager_value=sign * float("inf")).status == "inf_mask"  # far off
    assert judged(0.0, eager_value=sign * float("inf")).status == "inf_mask"
    outside = ref[0].clone()
    outside[i] = sign * 65504 * (1 + 3 * 5e-3)                  # float64 value outside 2x the floor
    assert judged(sign * float("inf"), ref0=outside).status == "inf_mask"
    far_off = [o.clone() for o in out]
    far_off[0][tuple(far.nonzero()[0].tolist())] = float("inf")
    assert compare(case, far_off, out, ref).status == "inf_mask"
    # a whole row at the threshold, all of it overflowing in the kernel: not rounding
    row_ref, row_eager, row_fused = ref[0].clone(), [o.clone() for o in out], [o.clone() for o in out]
    row_ref[i[0]] = -65467.0
    row_eager[0][i[0]] = -65504.0
    row_fused[0][i[0]] = -float("inf")
    assert compare(case, row_fused, row_eager, [row_ref] + ref[1:]).status == "inf_mask"


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
    cancels to ~4e-4 amplifies f32 rounding; eager itself, on the same inputs, errs 1e-5..3e-4
    by the order of K. A result as far off as eager in one of the orders the judge evaluates is
    right; 2.5x beyond the worst of them is not."""
    from diff_harness import K_ORDERS, k_permuted_inputs, other_eager_orders

    case = Case.from_json(GPU_SEED_30287560)
    ins = case.make_inputs()
    build = case.build()
    ref = list(case.build(reference=True)(*case.reference_inputs(ins)))
    err = lambda outs: float((outs[0].double() - ref[0]).norm() / ref[0].norm())  # noqa: E731
    # The worst of every order the judge evaluates, the one-term-at-a-time sum among them
    # (2.6e-4–3.4e-4 with ATen's CPU kernels for AVX2, AVX-512 and the default: over the f32
    # floor, 1.8e-4 at this K, on each). Session 12: the worst K permutation alone depends on
    # the CPU's GEMM kernel, and on an AMD EPYC it (1.6e-4) fell under the floor.
    high = max(other_eager_orders(case, ins, ref), key=err)
    low = min((list(build(*k_permuted_inputs(case, ins, j))) for j in range(K_ORDERS, 40)), key=err)
    assert err(high) > 3 * err(low), (err(high), err(low))   # the order matters this much here
    assert compare(case, high, low, ref).status == "mismatch"   # one lucky sample of eager: too tight
    # reversed: the worst order (listed first) comes last, so a judge that read only the first
    # of the other orders would fail here
    others = lambda: other_eager_orders(case, ins, ref)[::-1]  # noqa: E731
    judged = compare(case, high, low, ref, others)
    assert judged.ok and judged.reordered == 1, judged.detail
    noise = torch.randn(ref[0].shape, generator=testlib.generator("cpu", "noise"), dtype=torch.float64)
    bad = [(ref[0] + noise * (2.5 * err(high)) * ref[0].norm() / noise.norm()).float()]
    assert compare(case, bad, low, ref, others).status == "mismatch"


def test_judge_uses_only_orders_that_compute_the_same_function():
    """A 'permutation' that is not a reordering of the sum (here: K permuted on A only, as a
    future op that is not elementwise along K would do) must not widen the bound."""
    import diff_harness

    case = Case.from_json(GPU_SEED_30287560)
    ins = case.make_inputs()
    ref = list(case.build(reference=True)(*case.reference_inputs(ins)))
    out = list(case.build()(*ins))
    real = diff_harness.k_permuted_inputs
    try:
        diff_harness.k_permuted_inputs = lambda c, inputs, order: [real(c, inputs, order)[0]] + list(inputs[1:])
        # only the sequential-sum sample is left: no permuted one
        assert len(diff_harness.other_eager_orders(case, ins, ref)) == 1
        wrong = [o * 1.2 for o in out]
        o = compare(case, wrong, out, ref, lambda: diff_harness.other_eager_orders(case, ins, ref))
        assert o.status == "mismatch" and o.reordered == 1, o.detail
    finally:
        diff_harness.k_permuted_inputs = real


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


def test_sequential_gemm_is_eager_in_another_order():
    """sequential_gemm.py computes the same chains (float64-level agreement on the GEMM value),
    passes the judge against eager, and sums in another order than eager (different bits)."""
    seen = differ = 0
    for seed in range(400):
        case = generate(seed)
        if case.dtype != "f32" or len(case.outputs) != 1:
            continue
        ins = case.make_inputs()
        ref = list(case.build(reference=True)(*case.reference_inputs(ins)))
        eager = list(case.build()(*ins))
        seq = list(case.build(sequential_gemm=True)(*ins))
        o = compare(case, seq, eager, ref)
        assert o.ok, (seed, o.detail)
        seen += 1
        differ += not torch.equal(seq[0], eager[0])
        if seen == 25:
            break
    assert seen == 25 and differ > 0, (seen, differ)
