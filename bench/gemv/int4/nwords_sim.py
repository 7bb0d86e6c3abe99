"""Host simulation of kernels/gemv.cuh's path for AWQ's words (FX_B_NWORDS, session 67): the slot as the loaders lay
it out (packed_chunk for n-packed words: k row ci / (kNT / 32), words 4 (ci % (kNT / 32)) .. + 3 of it, the chunk's
16 bytes the four words as loaded) and expand_chunk's two byte permutes a word (selectors from the stated order's
nibble table, nword_selector), against the 8-bit K x N tile the compute reads: tile[k][n] = column n's nibble of row k
(value order[n % 8] of word n / 8), at row k, byte wswz(k, n / 16) * 16 + n % 16. Also the element-wise loader's byte
address (load_packed_elementwise) against the fast loader's chunk, for AWQ's order and the plain one. Runs on the CPU:
`python3 bench/gemv/int4/nwords_sim.py` prints "ok" (an assertion fails otherwise)."""
import random

from words_sim import byte_perm


def nword_selector(table, c0):
    s = 0
    for c in range(c0, c0 + 4):
        o = (table >> (4 * c)) & 15
        s |= ((o & 1) * 4 + (o >> 1)) << (4 * (c - c0))
    return s


def check(kNT, kKT, wswz, order):
    table = sum(o << (4 * j) for j, o in enumerate(order))
    sel0, sel1 = nword_selector(table, 0), nword_selector(table, 4)
    K, N = 2 * kKT, 2 * kNT
    Q = N // 8
    words = [[random.getrandbits(32) for _ in range(Q)] for _ in range(K)]  # qweight [K, N/8]
    nib = lambda k, n: (words[k][n // 8] >> (4 * order[n % 8])) & 15
    word_bytes = [b for row in words for w in row for b in w.to_bytes(4, "little")]  # the tensor's memory
    kWRowBytes = kNT
    for k0 in range(0, K, kKT):
        for n0 in range(0, N, kNT):
            tile = bytearray(kKT * kWRowBytes)
            for ci in range(kKT * kNT // 2 // 16):
                row, ch = ci // (kNT // 32), ci % (kNT // 32)
                k, n = k0 + row, n0 + 32 * ch
                addr = 4 * (k * Q + (n >> 3))  # the fast loader's source (strides in words)
                chunk = word_bytes[addr:addr + 16]
                for e in range(16):  # the element-wise loader's byte
                    w = n0 // 8 + 4 * ch + (e >> 2)
                    assert word_bytes[4 * (k * Q + w) + (e & 3)] == chunk[e]
                v = [int.from_bytes(bytes(chunk[4 * i:4 * i + 4]), "little") for i in range(4)]
                e = []
                for j in range(4):
                    lo, hi = v[j] & 0x0F0F0F0F, (v[j] >> 4) & 0x0F0F0F0F
                    e += [byte_perm(lo, hi, sel0), byte_perm(lo, hi, sel1)]
                for half in range(2):
                    at = row * kWRowBytes + wswz(row, 2 * ch + half) * 16
                    tile[at:at + 16] = b"".join(x.to_bytes(4, "little") for x in e[4 * half:4 * half + 4])
            for kk in range(kKT):
                for nn in range(kNT):
                    got = tile[kk * kWRowBytes + wswz(kk, nn // 16) * 16 + nn % 16]
                    assert got == nib(k0 + kk, n0 + nn), (k0, kk, n0, nn, got, nib(k0 + kk, n0 + nn))


random.seed(67)
assert nword_selector(0x73625140, 0) == 0x6420 and nword_selector(0x73625140, 4) == 0x7531
for order in ([0, 4, 1, 5, 2, 6, 3, 7], list(range(8)), random.sample(range(8), 8)):
    check(128, 128, lambda r, c: c ^ (r & 7), order)  # the mma.sync product's K x N swizzle
    check(128, 64, lambda r, c: c ^ (r & 7), order)   # 64 k a stage (FX_GEMV_KT=64)
    check(64, 128, lambda r, c: c ^ ((r >> 1) & 3), order)  # 64 columns (FX_GEMV_NT=64): 64-byte rows
print("ok")
