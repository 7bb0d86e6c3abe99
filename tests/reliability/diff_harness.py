"""Runs one generated chain through fxfuse and through eager (in its dtype and in float64) and
judges the fused result. Also: a shrinker that minimizes a failing case.

Routes through fxfuse:
- ``fx`` (fastest, most cases): ``make_fx(fn, tracing_mode="fake")`` → the pass on that ATen
  graph (``fxfuse.pass_driver.run_on_graph``) → run the GraphModule;
- ``export``: ``torch.export.export`` → ``fxfuse.rewrite(ep)`` → ``ep.module()(*inputs)``
  (the graph holds ``aten.linear``, ``aten.to.dtype``, ``aten.gelu``...);
- ``decomp``: the same after ``ep.run_decompositions()`` (``aten.t``/``addmm``/
  ``convert_element_type``: what the post-grad pass sees);
- ``compile``: ``torch.compile(fn, backend="fxfuse")`` (slow; a sample only).

The verdict: every output has eager's shape and dtype; NaN and ±Inf sit where eager (in the
case's dtype) has them; on the finite elements, the fused relative-norm error against the
float64 reference is at most ``max(floor, 2 × eager's own error + floor/10)``, the floor by
dtype (f32 1e-4·max(1, sqrt(K/64)), bf16 2e-2, f16 5e-3). Eager's error is one sample of its
summation order: where the epilogue amplifies rounding (rsqrt near 0, sin of a large value) the
same eager op on the same inputs in another order of K errs up to ~10× more, and CPU eager
(MKL) up to 2.7× more than cuBLAS (GPU differential seeds 30287560, 30288000). So an output over
the first bound is judged again, with the same rule, against the largest error of eager in other
orders: f32 GEMMs summed over K one term at a time (the order of a kernel with one accumulator
per element; sequential_gemm.py), K permuted (the reversal and 3 seeded permutations of every K axis; an order is used
only if the float64 reference computes the same values from the permuted inputs, which proves
the permutation is a reordering of the sum) and, for CUDA cases, eager on the CPU (another
library's blocking, also a correct f32 result). Only outputs of the GEMM and epilogue (a prologue
output has a K axis), and not in chains with comparisons (a flipped element in one sample would
inflate its error). A chain with comparisons may
flip a few elements whose inputs sit within rounding of the threshold: up to
``max(1, 0.2% of the elements)`` such flips are excused (and counted).
"""
from __future__ import annotations

import math
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from chain_generator import DTYPES, OPS, Case

FLOORS = {"f32": 1e-4, "bf16": 2e-2, "f16": 5e-3}
GEMM_CHAIN_NAME = "fxfuse.gemm_chain"


def floor_for(case: Case) -> float:
    f = FLOORS[case.dtype]
    if case.dtype == "f32":
        f *= max(1.0, math.sqrt(case.K / 64.0))
    return f


class _Wrap(torch.nn.Module):
    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _is_gemm_chain(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and GEMM_CHAIN_NAME in str(node.target)


def count_fused(graph: torch.fx.Graph) -> int:
    return sum(1 for n in graph.nodes if _is_gemm_chain(n))


def last_plan() -> dict | None:
    """The plan of the most recent pass run (for not-fused reasons), if the package keeps it."""
    try:
        from fxfuse import pass_driver
        reps = getattr(pass_driver, "_last_reports", None)
        if reps:
            return reps[-1][1]
    except Exception:  # noqa: BLE001
        pass
    return None


@dataclass
class Outcome:
    status: str                 # "ok", "mismatch", "nan_mask", "inf_mask", "dtype", "shape", "error:<where>"
    fused: int = 0              # gemm_chain nodes in the rewritten graph
    detail: str = ""
    reasons: list[str] = field(default_factory=list)   # not-fused reasons from the plan
    flips: int = 0
    reordered: int = 0          # outputs judged against eager's error in other orders of K
    errors: list[tuple[float, float, float]] = field(default_factory=list)  # (fused, eager, bound)

    @property
    def ok(self) -> bool:
        # "ok:torch_compile": a compile-route case where fxfuse gives torch.compile's own answer,
        # which departs from eager (_torch_compiles_own); counted apart in the run's totals
        return self.status == "ok" or self.status == "ok:torch_compile"


def run_fused(case: Case, inputs: list[torch.Tensor], route: str = "export",
              options: dict | None = None) -> tuple[list[torch.Tensor], int, list[str]]:
    import fxfuse

    fn = case.build()
    options = options or {}
    if route == "fx":
        from torch.fx.experimental.proxy_tensor import make_fx
        from fxfuse.pass_driver import Options, run_on_graph

        gm = make_fx(fn, tracing_mode="fake")(*inputs)
        res = run_on_graph(gm.graph, Options(**options), "differential")
        gm.recompile()
        fused = count_fused(gm.graph)
        reasons = _reasons(res.plan if res is not None else None)
        outs = gm(*inputs)
    elif route in ("export", "decomp"):
        ep = torch.export.export(_Wrap(fn), tuple(inputs))
        if route == "decomp":
            ep = ep.run_decompositions()
        ep2 = fxfuse.rewrite(ep, **options)
        fused = count_fused(ep2.graph)
        reasons = _reasons(last_plan())
        outs = ep2.module()(*inputs)
    elif route == "compile":
        torch._dynamo.reset()
        before = fxfuse.stats().get("chains_fused", 0)
        cfn = torch.compile(fn, backend="fxfuse", fullgraph=True)
        outs = cfn(*inputs)
        fused = fxfuse.stats().get("chains_fused", 0) - before
        reasons = _reasons(last_plan())
    else:
        raise ValueError(route)
    return list(outs), fused, reasons


def _reasons(plan: dict | None) -> list[str]:
    if not plan:
        return []
    return [str(e.get("reason")) for e in plan.get("report") or [] if e.get("status") != "fused"]


def _relnorm(x: torch.Tensor, ref: torch.Tensor) -> float:
    if x.numel() == 0:
        return 0.0
    d = (x.double() - ref.double()).norm().item()
    r = ref.double().norm().item()
    return d / r if r > 0 else d


def _excusable_flips(flips: torch.Tensor) -> bool:
    """Few and scattered, as threshold flips are: at most max(1, 0.2 %) of the elements, and no
    more than max(2, 1 %) of any row or column (a kernel bug tends to spoil a row, a column or a
    tile; a whole row of a 600-row output is under 0.2 %)."""
    n = int(flips.sum())
    if n > max(1, int(0.002 * flips.numel())):
        return False
    if flips.dim() < 2 or n <= 2:
        return True
    rows = flips.reshape(-1, flips.shape[-1])
    cols = flips.reshape(-1, flips.shape[-2], flips.shape[-1]).sum(0)
    return (int(rows.sum(1).max()) <= max(2, int(0.01 * rows.shape[1])) and
            int(cols.sum(0).max()) <= max(2, int(0.01 * rows.shape[0])))


def _overflow_flips(case: Case, fd: torch.Tensor, ed: torch.Tensor, r: torch.Tensor,
                    floor: float) -> torch.Tensor:
    """Elements where overflow is a threshold crossed by rounding: on one side ±inf with the sign
    of the float64 value r, on the other a finite value of that sign, and both r and that finite
    value within 2x the floor (the flip tolerance above) of the largest finite number of the
    case's dtype or of float32 (an intermediate of that dtype overflowed on one side only, so an
    f32 output of an f16 case counts too). No NaN on either side. GPU differential seed 30308239:
    f16 `v3 * v3**2`, r -65467, eager -65504, the kernel -inf (its K order rounded v3 one step
    further out); 3 of its 4,928 elements lie that close."""
    inf_f, inf_e = torch.isinf(fd), torch.isinf(ed)
    one_inf = (inf_f != inf_e) & ~torch.isnan(fd) & ~torch.isnan(ed) & torch.isfinite(r)
    if not one_inf.any():
        return one_inf
    inf_side = torch.where(inf_f, fd, ed)
    finite_side = torch.where(inf_f, ed, fd)
    same_sign = (torch.sign(inf_side) == torch.sign(r)) & (torch.sign(finite_side) == torch.sign(r))
    near = torch.zeros_like(one_inf)
    for dtype in {DTYPES[case.dtype], torch.float32}:
        big = torch.finfo(dtype).max
        window = 2 * floor * big
        near |= ((r.abs() - big).abs() <= window) & ((finite_side.abs() - big).abs() <= window)
    return one_inf & same_sign & near


K_ORDERS = 4  # eager runs in other orders of K when an output is over its first bound


def k_permuted_inputs(case: Case, inputs: list[torch.Tensor], order: int) -> list[torch.Tensor]:
    """``inputs`` with every axis named K permuted alike (order 0: reversed; then seeded
    random): the chain's mathematical result is unchanged, its rounding is not."""
    K = case.K
    if order == 0:
        perm = torch.arange(K - 1, -1, -1)
    else:
        perm = torch.randperm(K, generator=torch.Generator().manual_seed(case.seed * 31 + order))
    out = []
    for spec, t in zip(case.inputs, inputs):
        for axis, dim in enumerate(spec.shape):
            if dim == "K":
                t = t.index_select(axis, perm.to(t.device))
        out.append(t)
    return out


def other_eager_orders(case: Case, inputs: list[torch.Tensor], ref: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """Eager's outputs computed in other orders (module docstring): f32 GEMMs summed one term
    at a time (sequential_gemm.py); K permuted on the inputs' device, each permutation checked
    against the float64 reference; for CUDA inputs also eager on the CPU, as is and reversed."""
    build, build64 = case.build(), case.build(reference=True)
    k_free = _k_independent(case)

    def same_function(permuted):
        again = build64(*case.reference_inputs(permuted))
        return all(not free or _relnorm(a.detach().cpu().double(), r.detach().cpu().double()) < 1e-9
                   for free, a, r in zip(k_free, again, ref))

    outs = [list(case.build(sequential_gemm=True)(*inputs))] if case.dtype == "f32" else []
    for j in range(K_ORDERS):
        permuted = k_permuted_inputs(case, inputs, j)
        if same_function(permuted):
            outs.append(list(build(*permuted)))
    if any(t.is_cuda for t in inputs):
        host = [t.cpu() for t in inputs]
        try:
            outs.append(list(build(*host)))
            permuted = k_permuted_inputs(case, host, 0)
            if same_function(permuted):
                outs.append(list(build(*permuted)))
        except (RuntimeError, NotImplementedError):  # an op without a CPU kernel for this dtype
            pass
    return outs


def _k_independent(case: Case) -> list[bool]:
    """Per output: is it computed from the GEMM (its layout does not have K)?"""
    stage = {n.name: n.stage for n in case.nodes}
    return [stage.get(name) in ("gemm", "epilogue") for name in case.outputs]


def compare(case: Case, fused: list[torch.Tensor], eager: list[torch.Tensor],
            ref: list[torch.Tensor],
            other_orders: Callable[[], list[list[torch.Tensor]]] | None = None) -> Outcome:
    """The verdict (module docstring). ``other_orders``: eager's outputs in other orders
    (``other_eager_orders``), computed only when an output is over its first bound."""
    out = Outcome("ok")
    reordered: list[list[torch.Tensor]] | None = None
    k_free = _k_independent(case)
    if len(fused) != len(eager):
        return Outcome("shape", detail=f"{len(fused)} outputs, eager has {len(eager)}")
    floor = floor_for(case)
    for i, (f, e, r) in enumerate(zip(fused, eager, ref)):
        f = f.detach().cpu()
        e = e.detach().cpu()
        r = r.detach().cpu()
        if f.shape != e.shape:
            return Outcome("shape", detail=f"output {i}: shape {tuple(f.shape)} vs eager {tuple(e.shape)}")
        if f.dtype != e.dtype:
            return Outcome("dtype", detail=f"output {i}: dtype {f.dtype} vs eager {e.dtype}")
        if f.dtype == torch.bool:
            bad = int((f != e).sum())
            if not _excusable_flips(f != e) or (bad and not case.discontinuous):
                return Outcome("mismatch", detail=f"output {i}: {bad} bool elements differ")
            out.flips += bad
            continue
        fd, ed = f.double(), e.double()
        flips = torch.zeros_like(fd, dtype=torch.bool)
        if case.discontinuous:
            both = torch.isfinite(fd) & torch.isfinite(ed)
            # A flip is an element far outside the dtype's rounding of eager's value. 2x the floor
            # (bf16: 0.04 at |x| = 1; 20x let a 0.53 jump of a bf16 step function pass as rounding,
            # GPU differential seed 30272264) still leaves ordinary rounding out of the count.
            tol = 2 * floor * (ed.abs() + 1.0)
            flips = both & ((fd - ed).abs() > tol)
            nflip = int(flips.sum())
            if not _excusable_flips(flips):
                flips = torch.zeros_like(flips)  # too many to excuse: judge them all
            else:
                out.flips += nflip
        over = _overflow_flips(case, fd, ed, r, floor) & ~flips
        if over.any() and _excusable_flips(flips | over):
            flips = flips | over
            out.flips += int(over.sum())
        nan_f, nan_e = torch.isnan(fd) & ~flips, torch.isnan(ed) & ~flips
        if not torch.equal(nan_f, nan_e):
            where = (nan_f != nan_e).nonzero()[:4].tolist()
            return Outcome("nan_mask", detail=f"output {i}: NaN positions differ from eager at {where} "
                                              f"({int(nan_f.sum())} vs {int(nan_e.sum())} NaNs)")
        inf_f = torch.where(torch.isinf(fd) & ~flips, torch.sign(fd), torch.zeros_like(fd))
        inf_e = torch.where(torch.isinf(ed) & ~flips, torch.sign(ed), torch.zeros_like(ed))
        if not torch.equal(inf_f, inf_e):
            where = (inf_f != inf_e).nonzero()[:4].tolist()
            return Outcome("inf_mask", detail=f"output {i}: Inf positions/signs differ from eager at {where}")
        fin = torch.isfinite(fd) & torch.isfinite(ed) & torch.isfinite(r) & ~flips
        ef = _relnorm(fd[fin], r[fin])
        ee = _relnorm(ed[fin], r[fin])
        bound = max(floor, 2 * ee + floor / 10)
        if (not ef <= bound and other_orders is not None and not case.discontinuous
                and i < len(k_free) and k_free[i]):
            if reordered is None:
                try:
                    reordered = other_orders()
                except Exception as e:  # noqa: BLE001 - keep the first bound; say why
                    reordered = []
                    out.detail += f"(other orders not evaluated: {type(e).__name__}: {e}) "
            for outs in reordered:
                o = outs[i].detach().cpu().double()
                ok = fin & torch.isfinite(o)
                ee = max(ee, _relnorm(o[ok], r[ok]))
            bound = max(floor, 2 * ee + floor / 10)
            out.reordered += 1
        out.errors.append((ef, ee, bound))
        if not ef <= bound:  # also catches NaN
            worst = ((fd - r).abs() * fin).flatten().argmax().item()
            idx = list(torch.unravel_index(torch.tensor(worst), fd.shape)) if fd.dim() else []
            idx = [int(x) for x in idx]
            return Outcome("mismatch", reordered=out.reordered, detail=out.detail + (
                f"output {i}: fused rel err {ef:.3e} > bound {bound:.3e} (eager {case.dtype} err {ee:.3e}); "
                f"worst at {idx}: fused {fd.flatten()[worst].item():.6g} eager {ed.flatten()[worst].item():.6g} "
                f"ref {r.flatten()[worst].item():.6g}"))
    return out


def _torch_compiles_own(case: Case, inputs, fused, eager, ref, o: Outcome) -> Outcome:
    """torch.compile itself departs from eager in places (on the CPU: F.gelu(+inf) is +inf, eager
    NaN; 16-bit chains computed without eager's intermediate roundings). Under the backend, the
    answer to match there is torch.compile's without fxfuse: a compile-route failure is excused
    when that answer fails against eager too and fxfuse's passes the same judge against it."""
    torch._dynamo.reset()
    try:
        plain = list(torch.compile(case.build(), fullgraph=True)(*inputs))
    except Exception:  # noqa: BLE001 - then nothing excuses the failure
        return o
    own = compare(case, plain, eager, ref, lambda: other_eager_orders(case, inputs, ref))
    if own.ok or own.status != o.status or not compare(case, fused, plain, ref).ok:
        return o
    # and no further from the float64 reference than torch.compile is (where both are finite), up
    # to one rounding of the case's dtype: two Inductor compiles of the same graph differ by that
    slack = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}.get(case.dtype, 1e-6)
    for f, p, r in zip(fused, plain, ref):
        fin = torch.isfinite(f) & torch.isfinite(p) & torch.isfinite(r)
        if _relnorm(f[fin], r[fin]) > 1.25 * _relnorm(p[fin], r[fin]) + slack:
            return o
    return Outcome("ok:torch_compile", detail=f"torch.compile's own departure from eager ({own.status}: "
                                              f"{own.detail[:200]}); fxfuse matches torch.compile")


def check_case(case: Case, route: str = "export", device: str = "cpu", options: dict | None = None) -> Outcome:
    """Runs ``case`` through ``route`` and judges it. Never raises for a fxfuse failure."""
    inputs = case.make_inputs(device)
    try:
        eager = list(case.build()(*inputs))
        ref = list(case.build(reference=True)(*case.reference_inputs(inputs)))
    except Exception as e:  # noqa: BLE001 - a generator bug, not a fxfuse bug
        return Outcome("error:eager", detail=f"{type(e).__name__}: {e}")
    try:
        fused, nfused, reasons = run_fused(case, inputs, route, options)
    except Exception as e:  # noqa: BLE001
        tb = traceback.format_exc(limit=-4)
        return Outcome(f"error:{route}", detail=f"{type(e).__name__}: {str(e)[:2000]}\n{tb}")
    o = compare(case, fused, eager, ref, lambda: other_eager_orders(case, inputs, ref))
    if route == "compile" and not o.ok:
        o = _torch_compiles_own(case, inputs, fused, eager, ref, o)
    o.fused = nfused
    o.reasons = reasons
    # Inputs must not be modified by the fused program.
    again = case.make_inputs(device)
    for spec, a, b in zip(case.inputs, inputs, again):
        if not torch.equal(a.cpu(), b.cpu()) and not (a.isnan().any() and torch.equal(a.isnan(), b.isnan())):
            return Outcome("mutation", fused=nfused, detail=f"input {spec.name} was modified")
    return o


# ---------------------------------------------------------------------------------------------
# Shrinking


def _value_args(case: Case, node) -> list[str]:
    vals = {n.name for n in case.nodes}
    return [a for a in node.args if a in vals]


def _drop_node(case: Case, idx: int, replacement: str) -> Case | None:
    c = case.copy()
    victim = c.nodes.pop(idx)
    for n in c.nodes:
        n.args = [replacement if a == victim.name else a for a in n.args]
    outs = []
    for o in c.outputs:
        o = replacement if o == victim.name else o
        if o not in outs:
            outs.append(o)
    c.outputs = outs
    return _prune(c)


def _prune(c: Case) -> Case:
    """Removes nodes and inputs nothing uses."""
    changed = True
    while changed:
        changed = False
        used = set(c.outputs)
        for n in c.nodes:
            used.update(n.args)
        keep = [n for n in c.nodes if n.name in used]
        if len(keep) != len(c.nodes):
            c.nodes, changed = keep, True
    used = set(c.outputs)
    for n in c.nodes:
        used.update(n.args)
    c.inputs = [i for i in c.inputs if i.name in used]
    return c


def _candidates(case: Case):
    # 1. fewer outputs
    for k in range(len(case.outputs)):
        if len(case.outputs) > 1:
            c = case.copy()
            c.outputs.pop(k)
            yield _prune(c)
    # 2. drop nodes (replace by one of their operands), last first
    for idx in reversed(range(len(case.nodes))):
        n = case.nodes[idx]
        if n.stage == "gemm":
            continue
        for a in n.args:
            yield _drop_node(case, idx, a)
    # 3. smaller shapes
    for d, v in case.dims.items():
        for nv in (1, v // 2, v - 1):
            if 1 <= nv < v:
                c = case.copy()
                c.dims[d] = nv
                yield c
    # 4. simpler inputs and dtype
    for i, inp in enumerate(case.inputs):
        for key, simple in (("special", None), ("layout", "contig")):
            if getattr(inp, key) != simple:
                c = case.copy()
                setattr(c.inputs[i], key, simple)
                yield c
    if case.dtype != "f32":
        c = case.copy()
        c.dtype = "f32"
        yield c
    # 5. simpler params
    for idx, n in enumerate(case.nodes):
        for k in list(n.params):
            c = case.copy()
            del c.nodes[idx].params[k]
            yield c


def shrink(case: Case, still_fails: Callable[[Case], bool], budget: int = 400) -> Case:
    """Greedy minimization: apply any simplification that keeps the failure, until none does."""
    best = case
    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        for cand in _candidates(best):
            if cand is None:
                continue
            tries += 1
            try:
                ok = still_fails(cand)
            except Exception:  # noqa: BLE001 - an invalid candidate
                ok = False
            if ok:
                best = cand
                progress = True
                break
            if tries >= budget:
                break
    return best


def same_failure(route: str = "export", device: str = "cpu",
                 options: dict | None = None) -> Callable[[Case, Outcome], Callable[[Case], bool]]:
    def make(case: Case, outcome: Outcome) -> Callable[[Case], bool]:
        def pred(c: Case) -> bool:
            # the candidate must still be a valid program in eager
            o = check_case(c, route, device, options)
            return o.status == outcome.status
        return pred
    return make


def describe(case: Case, outcome: Outcome, route: str) -> str:
    ins = "\n".join(f"    {i.name}: {i.shape} store={i.store} fill={i.fill} layout={i.layout} special={i.special}"
                    for i in case.inputs)
    return (f"[{route}] seed={case.seed} {case.notes} dims={case.dims} -> {outcome.status}: {outcome.detail}\n"
            f"{case.source()}  inputs:\n{ins}\n  json: {case.to_json()}\n")
