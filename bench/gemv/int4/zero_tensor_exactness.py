# Session 63 review (a helper): the packed 16-bit route with a zero point TENSOR (kernels/gemv.cuh pair_scaled,
# FX_B_ZERO_TENSOR with FX_B_SCALE_IN_ELEM) against eager's `(nibble.to(E) - z) * s`, bit for bit, for E = bf16 and f16,
# exhaustively: (1) the sub, x = fma.rn(n, 1, -z) = RNE_E(exact n - z) vs eager RNE_E(fp32(n) - fp32(z)), every nibble n
# 0..15 x every non-NaN 16-bit z (inf, subnormals, -0 included; exact rationals in Python ints); (2) the mul,
# w = fma.rn(x, s, -0) = RNE_E(exact x*s + -0) vs eager RNE_E(fp32(x) * fp32(s)), every non-NaN x x every non-NaN s
# (2^32 pairs a type; float64 holds every product exactly; a direct float64 -> E rounding, checked first against
# numpy's f32/f64 -> f16, torch's f32 -> bf16 and an exact integer rounding). Zeros compare by bits (+0 != -0).
# `python3 zero_tensor_exactness.py` (numpy, torch for one check; uses 2 processes; ~1.5 min on 2 CPUs).
import math, time, multiprocessing as mp
import numpy as np
np.seterr(all="ignore")  # overflow to inf and inf * 0 are cases here

FMT = {'f16': (11, -14, 15), 'bf16': (8, -126, 127)}  # precision p (with the hidden bit), emin, emax
def emax_val(dt):
    p, emin, emax = FMT[dt]
    return (2.0 - 2.0 ** (1 - p)) * 2.0 ** emax

def all_values(dt):  # the 65536 bit patterns of E as float64 (exact), and their bits
    bits = np.arange(65536, dtype=np.uint32)
    v = bits.astype(np.uint16).view(np.float16) if dt == 'f16' else (bits << 16).view(np.float32)
    return v.astype(np.float64), bits

def e_bits(v, dt):  # float64 array of E values (exact) -> E bit patterns (uint32)
    if dt == 'f16': return v.astype(np.float16).view(np.uint16).astype(np.uint32)
    return v.astype(np.float32).view(np.uint32) >> 16

def f32_to_e_bits(f, dt):  # eager's fp32 -> E cast (RNE), as E bits
    if dt == 'f16': return f.astype(np.float16).view(np.uint16).astype(np.uint32)
    u = f.view(np.uint32)  # c10's round_to_nearest_even (no NaNs reach here unmasked)
    return (u + np.uint32(0x7fff) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)

def rn_np(P, dt):
    """RNE of exact float64 values P (normal, zero, +-inf or NaN) directly to E, as float64: quantum
    2^(max(e, emin) - p + 1), rint (RNE) of P / quantum (exact power-of-two scalings), overflow -> inf."""
    p, emin, emax = FMT[dt]
    be = (P.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7ff)
    np.maximum(be, np.uint64(emin + 1023), out=be)
    inv = ((np.uint64(2 * 1023 + p - 1) - be) << np.uint64(52)).view(np.float64)
    q = ((be - np.uint64(p - 1)) << np.uint64(52)).view(np.float64)
    R = np.rint(P * inv) * q
    big = np.abs(R) > emax_val(dt)
    if big.any(): R[big] = R[big] * np.inf
    return R

def rn_exact(sign, N, K, dt):
    """RNE of (-1)^sign * N * 2^-K (Python ints, N > 0) to E, as a Python float."""
    p, emin, emax = FMT[dt]
    e = N.bit_length() - 1 - K
    qe = max(e, emin) - (p - 1)
    sh = K + qe
    if sh <= 0: M = N << -sh
    else:
        M, r = N >> sh, N & ((1 << sh) - 1)
        h = 1 << (sh - 1)
        if r > h or (r == h and (M & 1)): M += 1
    v = math.ldexp(M, qe)
    if v > emax_val(dt): v = math.inf
    return -v if sign else v

def ratio(v):  # finite float -> (num, K): v = num / 2^K exactly
    a, b = float(v).as_integer_ratio()
    return a, b.bit_length() - 1

# ---- 0: validate rn_np ------------------------------------------------------------------------------------------
def validate():
    import torch
    rng = np.random.default_rng(1)
    for dt in ('f16', 'bf16'):
        vals, _ = all_values(dt)
        fin = np.sort(np.unique(vals[np.isfinite(vals)]))
        mid = (fin[:-1] + fin[1:]) / 2  # every midpoint between neighbours (exact in float64), and E's overflow bound
        p, emin, emax = FMT[dt]
        ovf = emax_val(dt) + 2.0 ** (emax - p)  # half an ulp above E's max: RNE goes to inf
        mid = np.concatenate([mid, [ovf, -ovf]])
        # (a) float32 inputs: midpoints, their float32 neighbours, random patterns; reference numpy / torch f32 -> E
        m32 = mid.astype(np.float32)
        f = np.concatenate([m32, np.nextafter(m32, np.float32(np.inf)), np.nextafter(m32, np.float32(-np.inf)),
                            rng.integers(0, 2**32, 4_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
        f = f[~np.isnan(f)]
        mine = e_bits(rn_np(f.astype(np.float64), dt), dt)
        ref = (f.astype(np.float16).view(np.uint16).astype(np.uint32) if dt == 'f16' else
               torch.from_numpy(f).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).astype(np.uint32))
        bad32 = int((mine != ref).sum())
        # (b) float64 inputs: midpoints' float64 neighbours (where a float32 step would double-round) and random
        # values over E's range; reference: exact integer rounding (and numpy's direct f64 -> f16)
        g = np.concatenate([np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf), mid,
                            rng.uniform(-1, 1, 200_000) * 2.0 ** rng.integers(emin - p - 3, emax + 2, 200_000)])
        g = np.concatenate([g, -g])
        mine64 = rn_np(g, dt)
        ex = np.array([rn_exact(int(v < 0), *((lambda a, k: (abs(a), k))(*ratio(v))), dt) if v != 0 else v
                       for v in g])
        bad64 = int((mine64.view(np.uint64) != ex.view(np.uint64)).sum())
        bad16 = int((g.astype(np.float16).view(np.uint16) != mine64.astype(np.float16).view(np.uint16)).sum()
                    ) if dt == 'f16' else 0
        print(f'validate rn {dt}: f32 inputs {f.size} bad {bad32} (vs {"numpy" if dt == "f16" else "torch"} f32->E); '
              f'f64 inputs {g.size} bad {bad64} (vs exact ints)' + (f', {bad16} (vs numpy f64->f16)' if dt == 'f16' else ''))
        assert bad32 == 0 and bad64 == 0 and bad16 == 0

# ---- 1: the sub ------------------------------------------------------------------------------------------------
def check_sub(dt):
    vals, bits = all_values(dt)
    ok = ~np.isnan(vals); zv, zb = vals[ok], bits[ok]
    z32 = zv.astype(np.float32)  # exact
    ker = np.empty((16, zv.size)); eag = np.empty((16, zv.size), dtype=np.uint32)
    for n in range(16):
        eag[n] = f32_to_e_bits(np.float32(n) - z32, dt)  # eager: fp32 sub (RNE), then cast
        for j, z in enumerate(zv.tolist()):  # kernel: one RNE of exact n*1 + (-z)
            if math.isinf(z): ker[n, j] = -z
            else:
                a, K = ratio(z); N = (n << K) - a
                # exact zero: n*1 = +0 plus -z (IEEE sum-of-zeros rule) / x + (-x) = +0 under RN
                ker[n, j] = (0.0 + (-z) if n == 0 else 0.0) if N == 0 else rn_exact(int(N < 0), abs(N), K, dt)
    kb = e_bits(ker.ravel(), dt).reshape(16, -1)
    report(f'sub {dt}: n 0..15 x z', kb != eag, kb, eag, lambda i, j: f'n={i} z=0x{zb[j]:04x}')

def report(name, mism, kb, eb, who):
    nm = int(mism.sum()); zs = int((mism & ((kb | eb) & 0x7fff == 0)).sum())
    print(f'{name}: cases {mism.size}, mismatches {nm} (only the sign of zero: {zs})')
    for idx in np.argwhere(mism)[:5]:
        print(f'   {who(*idx)}: kernel 0x{int(kb[tuple(idx)]):04x} eager 0x{int(eb[tuple(idx)]):04x}')

# ---- 2: the mul (x every non-NaN E value, chunks of x rows x all s, 2 processes) -----------------------------
def mul_rows(args):
    dt, lo, hi = args
    vals, bits = all_values(dt)
    ok = ~np.isnan(vals); v, b = vals[ok], bits[ok]
    s = v
    nm = zs = nan = 0; ex = []
    R = 4  # rows a pass: ~260k pairs, cache-sized
    for r0 in range(lo, hi, R):
        xs = v[r0:min(hi, r0 + R)]
        P = (xs[:, None] * s[None, :]).ravel()  # exact
        kb = e_bits(rn_np(P + (-0.0), dt), dt)  # fma.rn(x, s, -0): one RNE of exact x*s + (-0); zeros' sign by IEEE
        eb = f32_to_e_bits(P.astype(np.float32), dt)  # eager: fp32 product (RNE, subnormals, overflow), then cast
        mism = kb != eb
        if mism.any() or np.isnan(xs * 0).any() or (xs == 0).any():
            isn = np.isnan(P); nan += int(isn.sum())  # inf * 0: NaN on both routes
            mism &= ~isn
            idx = np.flatnonzero(mism)
            nm += idx.size; zs += int((((kb[idx] | eb[idx]) & 0x7fff) == 0).sum())
            for i in idx[:max(0, 5 - len(ex))]:
                ex.append((int(b[r0 + i // s.size]), int(b[i % s.size]), int(kb[i]), int(eb[i])))
    return nm, zs, nan, ex

def check_mul(dt, pool):
    vals, _ = all_values(dt)
    n = int((~np.isnan(vals)).sum()); step = 1024
    res = pool.map(mul_rows, [(dt, a, min(n, a + step)) for a in range(0, n, step)], chunksize=1)
    nm = sum(r[0] for r in res); zs = sum(r[1] for r in res); nan = sum(r[2] for r in res)
    ex = [e for r in res for e in r[3]][:5]
    print(f'mul {dt}: x x s (every non-NaN E each): cases {n * n}, mismatches {nm} (only the sign of zero: {zs}); '
          f'{nan} inf*0 -> NaN on both')
    for xb, sb, k, e in ex: print(f'   x=0x{xb:04x} s=0x{sb:04x}: kernel 0x{k:04x} eager 0x{e:04x}')

if __name__ == '__main__':
    t0 = time.time()
    validate(); print(f'  ({time.time() - t0:.0f} s)')
    for dt in ('bf16', 'f16'): check_sub(dt)
    print(f'  ({time.time() - t0:.0f} s)')
    with mp.Pool(2) as pool:
        for dt in ('bf16', 'f16'):
            check_mul(dt, pool); print(f'  ({time.time() - t0:.0f} s)')
