"""Decode-sized GEMMs (issue 7): fxfuse against cuBLAS and against the memory limit, in one process.

At small M a GEMM streams its weights once, so the measure is the weight bytes per second.
Per shape and chain:
  mm       cuBLAS `torch.mm(x, w)` on 16-bit weights of the same shape (the issue's floor;
           `torch.mm(x, w.t())` for the dense_nk chains' [N, K] weight, as F.linear runs it)
  eager    the chain as written (for quantized weights: convert, scale, mm, ...)
  compile  torch.compile default (with --compile)
  fxfuse   the graph rewritten by the pass (make_fx -> fxfuse pass -> GraphModule)
  %copy    weight bytes / fxfuse time against the copy bandwidth measured in the same run (a
           device-to-device copy of 1 GiB of traffic, reads plus writes, as shared/perf-notes.md
           counts it); %same: against a copy moving the same bytes as the weights (its fixed cost
           weighs as much as the kernel's, so it is the softer reading)
and the issue's targets per row (target column): dense 16-bit weights >= 90 % of copy and not
slower than mm; int8 / fp8 weights >= 80 %; at M=16, K=4096, N=14336 every int8 / fp8 chain
<= 0.018 ms and, with --compile, >= 4.5x torch.compile default; and fxfuse's error at most
max(2x eager's, 1e-2) against float64.
Timing: CUDA events around back-to-back calls that rotate over copies of the weights (together
>= 256 MB, five times the L2), so every call reads its weights from HBM and no L2 flush (whose
dirty lines would be written back during the timed call) is needed; each batch is queued behind
a GPU spin, so the events time the device, not the host's launch rate (rotated_ms_each). Median
of 5 batches; the variants' batches interleaved. The path column says what the op ran (bench/op_path.py).

  python bench/bench_decode.py [--quick] [--compile] [--m 1,4,16,64] [--kn 4096x14336,...]
                               [--chains bias,w8_bias,...] [--split-k S] [--stage-kb KB] [--force-fuse]
                               (writes $OUT/bench_decode.json)
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

from bench_chains import fused_module, relerr
from fxfuse.pass_driver import Options
from bench_out import out_dir
from op_path import counters, path_of

# Weight-only quantized forms as users write them. Each chain takes
# (x, w, b, wq, wq_nk, s, wf8, s_t): w [K,N] 16-bit; wq int8 [K,N] and wq_nk its [N,K] copy
# (nn.Linear layout); s per-output-channel scale [N]; wf8 e4m3 [K,N]; s_t a per-tensor scale.
CHAINS = {
    "bias_gelu": ("dense", lambda x, w, b, wq, wq_nk, s, wf8, s_t: F.gelu(x @ w + b, approximate="tanh")),
    # (a bare x @ w is not fxfuse's: nothing to fuse, the pass leaves it to cuBLAS)
    "bias": ("dense", lambda x, w, b, wq, wq_nk, s, wf8, s_t: x @ w + b),
    "w8": ("int8", lambda x, w, b, wq, wq_nk, s, wf8, s_t: x @ (wq.to(x.dtype) * s)),
    "w8_bias": ("int8", lambda x, w, b, wq, wq_nk, s, wf8, s_t: x @ (wq.to(x.dtype) * s) + b),
    "w8_bias_gelu": ("int8", lambda x, w, b, wq, wq_nk, s, wf8, s_t:
                     F.gelu(x @ (wq.to(x.dtype) * s) + b, approximate="tanh")),
    "w8_linear": ("int8", lambda x, w, b, wq, wq_nk, s, wf8, s_t: F.linear(x, wq_nk.to(x.dtype) * s[:, None])),
    "w8_linear_bias": ("int8", lambda x, w, b, wq, wq_nk, s, wf8, s_t:
                       F.linear(x, wq_nk.to(x.dtype) * s[:, None], b)),
    "f8ch_bias": ("fp8", lambda x, w, b, wq, wq_nk, s, wf8, s_t: x @ (wf8.to(x.dtype) * s) + b),
    "w8_linear_bias_gelu": ("int8", lambda x, w, b, wq, wq_nk, s, wf8, s_t:
                            F.gelu(F.linear(x, wq_nk.to(x.dtype) * s[:, None], b), approximate="tanh")),
    "f8t_bias": ("fp8", lambda x, w, b, wq, wq_nk, s, wf8, s_t: x @ (wf8.to(x.dtype) * s_t) + b),
    "f8ch_bias_gelu": ("fp8", lambda x, w, b, wq, wq_nk, s, wf8, s_t:
                       F.gelu(x @ (wf8.to(x.dtype) * s) + b, approximate="tanh")),
    # nn.Linear's layout, dense (kind "dense_nk": w is then the [N, K] weight; run only when named in
    # --chains): without a bias the product is 16-bit (mm(x, w.t())), with one it is addmm's f32
    # product, whose bias eager adds inside cuBLAS
    "linear_gelu": ("dense_nk", lambda x, w, b, *_: F.gelu(F.linear(x, w), approximate="tanh")),
    "linear_bias_gelu": ("dense_nk", lambda x, w, b, *_: F.gelu(F.linear(x, w, b), approximate="tanh")),
}
# Group-wise int8 weights (GPTQ: a scale per 128 k and column), kind "int8_g": these take (x, w, b, wq, wq_nk, s, wf8,
# s_t, sg, sg_nk) with sg [K/128, N] and sg_nk [N, K/128] (the chains above get the first eight).
GROUP = 128


def _w8g(wq, sg, dt):
    K, N = wq.shape
    return (wq.view(K // GROUP, GROUP, N).to(dt) * sg[:, None, :]).view(K, N)


def _w8g_nk(wq_nk, sg_nk, dt):
    N, K = wq_nk.shape
    return (wq_nk.view(N, K // GROUP, GROUP).to(dt) * sg_nk[:, :, None]).view(N, K)


CHAINS.update({
    "w8g_bias": ("int8_g", lambda x, w, b, wq, wq_nk, s, wf8, s_t, sg, sg_nk: x @ _w8g(wq, sg, x.dtype) + b),
    "w8g_linear_bias": ("int8_g", lambda x, w, b, wq, wq_nk, s, wf8, s_t, sg, sg_nk:
                        F.linear(x, _w8g_nk(wq_nk, sg_nk, x.dtype), b)),
})


# Packed int4 weights (kind "int4_g": two 4-bit values of k to a byte, low nibble first, `(q - 8) * s` with a scale per
# 128 k): these take the int8_g chains' ten arguments, then wq4 [K/2, N] and wq4_nk [N, K/2] (uint8).
def _w4g(wq4, sg, dt):
    K, N = 2 * wq4.shape[0], wq4.shape[1]
    q = torch.stack([wq4 & 15, wq4 >> 4], 1).view(K, N)
    return ((q.view(K // GROUP, GROUP, N).to(dt) - 8) * sg[:, None, :]).view(K, N)


def _w4g_nk(wq4_nk, sg_nk, dt):
    N, K = wq4_nk.shape[0], 2 * wq4_nk.shape[1]
    q = torch.stack([wq4_nk & 15, wq4_nk >> 4], -1).view(N, K)
    return ((q.view(N, K // GROUP, GROUP).to(dt) - 8) * sg_nk[:, :, None]).view(N, K)


CHAINS.update({
    "w4g_bias": ("int4_g", lambda x, w, b, wq, wq_nk, s, wf8, s_t, sg, sg_nk, wq4, wq4_nk: x @ _w4g(wq4, sg, x.dtype) + b),
    "w4g_linear_bias": ("int4_g", lambda x, w, b, wq, wq_nk, s, wf8, s_t, sg, sg_nk, wq4, wq4_nk:
                        F.linear(x, _w4g_nk(wq4_nk, sg_nk, x.dtype), b)),
})


# Packed int4 weights with a zero point tensor (kind "int4_z": AWQ's / HQQ's asymmetric `(q - z) * s`, z a 16-bit value
# per 128 k and column, 0..15): the int4_g chains' twelve arguments, then zg [K/128, N] and zg_nk [N, K/128].
def _w4z(wq4, sg, zg, dt):
    K, N = 2 * wq4.shape[0], wq4.shape[1]
    q = torch.stack([wq4 & 15, wq4 >> 4], 1).view(K, N)
    return ((q.view(K // GROUP, GROUP, N).to(dt) - zg[:, None, :]) * sg[:, None, :]).view(K, N)


def _w4z_nk(wq4_nk, sg_nk, zg_nk, dt):
    N, K = wq4_nk.shape[0], 2 * wq4_nk.shape[1]
    q = torch.stack([wq4_nk & 15, wq4_nk >> 4], -1).view(N, K)
    return ((q.view(N, K // GROUP, GROUP).to(dt) - zg_nk[:, :, None]) * sg_nk[:, :, None]).view(N, K)


CHAINS.update({
    "w4z_bias": ("int4_z", lambda x, w, b, wq, wq_nk, s, wf8, s_t, sg, sg_nk, wq4, wq4_nk, zg, zg_nk:
                 x @ _w4z(wq4, sg, zg, x.dtype) + b),
    "w4z_linear_bias": ("int4_z", lambda x, w, b, wq, wq_nk, s, wf8, s_t, sg, sg_nk, wq4, wq4_nk, zg, zg_nk:
                        F.linear(x, _w4z_nk(wq4_nk, sg_nk, zg_nk, x.dtype), b)),
})
CHAIN_ARGS = {"int8_g": 10, "int4_g": 12, "int4_z": 14}  # the arguments a chain of the kind takes (8 for the others)
GROUP_KINDS = ("int8_g", "int4_g", "int4_z")
DENSE_DTYPES = (torch.bfloat16, torch.float16)
KN = ((4096, 4096), (4096, 14336), (14336, 4096))
DENSE_KINDS = ("dense", "dense_nk")
TARGET_COPY = {"dense": 0.90, "dense_nk": 0.90, "int8": 0.80, "fp8": 0.80, "int8_g": 0.80, "int4_g": 0.80,
               "int4_z": 0.80}


def weight_bytes(kind, K, N, dt):
    if kind in ("int4_g", "int4_z"):
        return K * N // 2
    return K * N * (dt.itemsize if kind in DENSE_KINDS else 1)


ROTATION_BYTES = 256 << 20
WEIGHT_ARGS = (1, 3, 4, 6, 8, 9, 10, 11, 12, 13)  # w, wq, wq_nk, wf8, sg, sg_nk, wq4, wq4_nk, zg, zg_nk: rotated


_sleep_cycles_per_ms = None


def gpu_sleep(ms):
    """Keep the stream busy for about `ms` (torch.cuda._sleep spins for a number of GPU cycles)."""
    global _sleep_cycles_per_ms
    if _sleep_cycles_per_ms is None:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)  # the first spin also pays the clock ramp-up
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        torch.cuda.synchronize()
        _sleep_cycles_per_ms = 1_000_000 / start.elapsed_time(end)
    torch.cuda._sleep(int(ms * _sleep_cycles_per_ms))


def rotated_ms_each(fns: dict, arg_sets, batches=5) -> dict:
    """ms per call of each fns[name](*arg_sets[i % n]) called back to back, in device time; the
    variants' batches interleaved (batch j of every variant before batch j + 1 of any), so that a
    clock swing hits them alike (one variant after another until session 27: bench/RESULTS.md Run
    AP found such ordering worth up to ~10 % at the Hopper shapes).

    Decode kernels run for 5-30 us, about what Python and the dispatcher take to launch one
    call, so calls timed as the host issues them would measure the host. Each batch is therefore
    queued behind a GPU spin: if the stream has already reached the batch's start event when
    the host has finished queuing it, the GPU may have waited for the host, and the batch is
    timed again behind a spin 4x longer (the longer spin is kept for that variant's later
    batches). A variant whose host needs more than a second to queue a batch fails rather than
    report a host-bound figure."""
    n = len(arg_sets)
    calls = n * max(1, 60 // n)

    def run(fn):
        for i in range(calls):
            fn(*arg_sets[i % n])

    spin_ms = {}
    for name, fn in fns.items():
        for args in arg_sets:
            fn(*args)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        run(fn)
        spin_ms[name] = 2e3 * (time.perf_counter() - t0) + 1.0
        torch.cuda.synchronize()
    times = {name: [] for name in fns}
    while any(len(t) < batches for t in times.values()):
        for name, fn in fns.items():
            if len(times[name]) >= batches:
                continue
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            gpu_sleep(spin_ms[name])
            start.record()
            run(fn)
            caught_up = start.query()  # the spin ended before the host finished queuing
            end.record()
            torch.cuda.synchronize()
            if caught_up:
                if spin_ms[name] > 1e3:
                    raise RuntimeError(f"host-bound: {calls} calls of {name} could not be queued within a "
                                       f"{spin_ms[name]:.0f} ms spin")
                spin_ms[name] *= 4
                continue
            times[name].append(start.elapsed_time(end) / calls)
    return {name: statistics.median(t) for name, t in times.items()}


def rotated_ms(fn, arg_sets, batches=5):
    """rotated_ms_each for one function."""
    return rotated_ms_each({"fn": fn}, arg_sets, batches)["fn"]


def rotation(args, bytes_per_set, weight_args=WEIGHT_ARGS):
    """Argument sets with their own copies of the weights (the arguments at `weight_args`),
    >= ROTATION_BYTES together."""
    n = max(2, -(-ROTATION_BYTES // bytes_per_set))
    sets = [args]
    for _ in range(n - 1):
        sets.append(tuple(a.clone() if i in weight_args else a for i, a in enumerate(args)))
    return sets


_copy_ms = {}


def copy_ms(nbytes):
    """A device copy whose reads plus writes are `nbytes`, timed like the chains."""
    if nbytes not in _copy_ms:
        half = nbytes // 2
        bufs = rotation_buffers(half)
        _copy_ms[nbytes] = rotated_ms(lambda src, dst: dst.copy_(src), bufs)
    return _copy_ms[nbytes]


def rotation_buffers(nbytes):
    n = max(2, -(-ROTATION_BYTES // (2 * nbytes)))
    return [(torch.empty(nbytes, device="cuda", dtype=torch.uint8),
             torch.empty(nbytes, device="cuda", dtype=torch.uint8)) for _ in range(n)]


def bench_row(M, K, N, dt, name, with_compile, copy_gbps, force=False):
    kind, chain = CHAINS[name]
    argc = CHAIN_ARGS.get(kind, 8)
    fn = lambda *a: chain(*a[:argc])  # noqa: E731
    g = torch.Generator(device="cuda").manual_seed(M * 7 + K * 3 + N)
    x = torch.randn(M, K, device="cuda", dtype=dt, generator=g)
    nk = kind == "dense_nk"
    w = torch.randn(*((N, K) if nk else (K, N)), device="cuda", dtype=dt, generator=g) / K ** 0.5
    b = torch.randn(N, device="cuda", dtype=dt, generator=g)
    wq = torch.randint(-127, 127, (K, N), device="cuda", dtype=torch.int8, generator=g)
    s = (torch.rand(N, device="cuda", generator=g) / 64 + 1e-3).to(dt)
    wf8 = (torch.randn(K, N, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn)
    s_t = torch.tensor(0.02, device="cuda", dtype=dt)
    sg = (torch.rand(K // GROUP, N, device="cuda", generator=g) / 64 + 1e-3).to(dt)
    wq4 = torch.randint(0, 256, (K // 2, N), device="cuda", dtype=torch.uint8, generator=g)
    zg = (torch.rand(K // GROUP, N, device="cuda", generator=g) * 15).to(dt)
    args = (x, w, b, wq, wq.t().contiguous(), s, wf8, s_t, sg, sg.t().contiguous(), wq4, wq4.t().contiguous(), zg,
            zg.t().contiguous())
    row = dict(M=M, K=K, N=N, dtype=str(dt).split(".")[-1], chain=name, weights=kind)
    sets = rotation(args, sum(args[i].nbytes for i in WEIGHT_ARGS))
    ref = fn(*[a.double() if a.is_floating_point() and a.dtype.itemsize > 1 else a for a in args])
    gm, nfused, _ = fused_module(fn, args, Options(only_profitable=False) if force else None)
    out = gm(*args)
    out = out[0] if isinstance(out, (list, tuple)) else out
    row["fused_chains"] = nfused
    mm = (lambda x, w, *_: torch.mm(x, w.t())) if nk else (lambda x, w, *_: torch.mm(x, w))
    fns = {"mm": mm, "eager": fn, "fxfuse": gm}
    if with_compile:
        torch._dynamo.reset()
        c = torch.compile(fn, dynamic=False)
        c(*args)
        fns["compile"] = c
    before = counters()  # only the fxfuse variant calls the op
    row.update(rotated_ms_each(fns, sets))
    row["path"] = path_of(before, counters())
    row["fxfuse_relerr"] = relerr(out, ref)
    row["eager_relerr"] = relerr(fn(*args), ref)
    del sets
    nbytes = weight_bytes(kind, K, N, dt)
    row["weight_bytes"] = nbytes
    row["gbps"] = nbytes / row["fxfuse"] / 1e6
    row["pct_copy"] = row["gbps"] / copy_gbps
    row["pct_same"] = copy_ms(nbytes) / row["fxfuse"]
    ok = row["pct_copy"] >= TARGET_COPY[kind] and nfused > 0
    ok = ok and row["fxfuse_relerr"] <= max(2 * row["eager_relerr"], 1e-2)
    if kind in DENSE_KINDS:
        ok = ok and row["fxfuse"] <= row["mm"]
    elif (M, K, N) == (16, 4096, 14336):
        ok = ok and row["fxfuse"] <= 0.018
        if with_compile:
            ok = ok and row["compile"] >= 4.5 * row["fxfuse"]
    row["target_met"] = ok
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one (K, N), bf16 and int8 chains only")
    ap.add_argument("--compile", action="store_true", help="also torch.compile default (slow to compile)")
    ap.add_argument("--m", default="1,4,16,64", help="comma-separated M values")
    ap.add_argument("--kn", default="", help="comma-separated KxN pairs, e.g. 4096x14336 (default: all three)")
    ap.add_argument("--chains", default="", help="comma-separated chain names (default: all but the dense_nk ones)")
    ap.add_argument("--split-k", type=int, default=0, choices=range(0, 9),
                    help="launch every gemv with this split-K cluster size (1 to 8), to re-measure the rule")
    ap.add_argument("--stage-kb", type=int, default=0,
                    help="size the gemv's pipeline to about this many KB instead of 100 (FXFUSE_GEMV_STAGE_KB: "
                         "fewer stages, more CTAs per SM)")
    ap.add_argument("--force-fuse", action="store_true",
                    help="fuse every chain (only_profitable off) and launch the op's kernel where its dispatch would "
                         "run ATen (FXFUSE_FORCE_KERNEL=1): chains without a fast kernel timed as the generic one runs")
    a = ap.parse_args()
    if a.force_fuse:
        os.environ["FXFUSE_FORCE_KERNEL"] = "1"
    tag = ("_s%d" % a.split_k if a.split_k else "") + ("_kb%d" % a.stage_kb if a.stage_kb else "")
    out = os.path.join(out_dir(), f"bench_decode{tag}.json")  # created before the minutes of measuring
    if a.split_k:  # read once by codegen, before the first gemv is planned
        os.environ["FXFUSE_GEMV_SPLIT_K"] = str(a.split_k)
    if a.stage_kb:
        os.environ["FXFUSE_GEMV_STAGE_KB"] = str(a.stage_kb)
    torch.manual_seed(0)
    ms_list = [int(m) for m in a.m.split(",")]
    kn = KN[1:2] if a.quick else KN
    if a.kn:
        kn = [tuple(int(v) for v in pair.split("x")) for pair in a.kn.split(",")]
    wanted = set(a.chains.split(",")) if a.chains else None
    # the dense_nk chains run only when named (and not with --quick)
    named_nk = [n for n, (kind, _) in CHAINS.items() if kind == "dense_nk" and wanted and n in wanted]
    big = 1 << 30
    copy_gbps = big / copy_ms(big) / 1e6
    print(f"copy bandwidth, 1 GiB of traffic: {copy_gbps:.0f} GB/s (reads + writes)", flush=True)
    rows = []
    for K, N in kn:
        for M in ms_list:
            for dt in DENSE_DTYPES[:1] if a.quick else DENSE_DTYPES:
                for name in ["bias_gelu"] if a.quick else ["bias_gelu", "bias"] + named_nk:
                    if wanted is None or name in wanted:
                        rows.append(bench_row(M, K, N, dt, name, a.compile, copy_gbps, a.force_fuse))
            quant = ["w8_bias", "w8_linear_bias"] if a.quick else \
                [n for n, (kind, _) in CHAINS.items() if kind not in DENSE_KINDS]
            for name in quant:
                if wanted is None or name in wanted:
                    rows.append(bench_row(M, K, N, torch.bfloat16, name, a.compile, copy_gbps, a.force_fuse))
    with open(out, "w") as f:
        json.dump({"rows": rows, "copy_gbps_1GiB": copy_gbps}, f, indent=1)
    print(f"copy bandwidth, 1 GiB of traffic: {copy_gbps:.0f} GB/s (reads + writes)")
    print(f"{'M':>3} {'K':>6} {'N':>6} {'dtype':>8} {'chain':>15} {'mm':>7} {'eager':>7} {'compile':>7} "
          f"{'fxfuse':>7} {'fx/mm':>6} {'eag/fx':>6} {'GB/s':>6} {'%copy':>6} {'%same':>6} {'relerr':>8} {'target':>7}  path")
    for r in rows:
        cp = f"{r['compile']:7.4f}" if "compile" in r else "      -"
        print(f"{r['M']:>3} {r['K']:>6} {r['N']:>6} {r['dtype']:>8} {r['chain']:>15} {r['mm']:7.4f} "
              f"{r['eager']:7.4f} {cp} {r['fxfuse']:7.4f} {r['fxfuse'] / r['mm']:6.2f} "
              f"{r['eager'] / r['fxfuse']:6.2f} {r['gbps']:6.0f} {100 * r['pct_copy']:5.0f}% {100 * r['pct_same']:5.0f}% "
              f"{r['fxfuse_relerr']:8.1e} {'met' if r['target_met'] else 'NOT met':>7}  {r['path']}")
    met = sum(r["target_met"] for r in rows)
    print(f"issue-7 targets met on {met} of {len(rows)} rows")


if __name__ == "__main__":
    main()
