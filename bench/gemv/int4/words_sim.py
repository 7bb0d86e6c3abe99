"""Host simulation of kernels/gemv.cuh's GPTQ words path (FX_B_WORDS, session 65): the slot as the loaders lay it out
(packed_chunk for words: word row ci / (kNT / 4), columns 4 (ci % (kNT / 4)) .. + 3, the chunk's 16 bytes the four
words as loaded) and expand_chunk's 4 x 4 byte transpose (__byte_perm emulated), against the 8-bit K x N tile the
compute reads: tile[k][n] = nibble k of column n, at row k, byte wswz(k, n / 16) * 16 + n % 16. Also the element-wise
loader's byte address (load_packed_elementwise) against the fast loader's chunk. Runs on the CPU:
`python3 bench/gemv/int4/words_sim.py` prints "ok" (an assertion fails otherwise)."""
import random


def byte_perm(x, y, s):
    b = [(x >> (8 * i)) & 255 for i in range(4)] + [(y >> (8 * i)) & 255 for i in range(4)]
    return sum(b[(s >> (4 * i)) & 7] << (8 * i) for i in range(4))


def check(kNT, kKT, wswz):
    K, N = 4 * kKT, 2 * kNT
    words = [[random.getrandbits(32) for _ in range(N)] for _ in range(K // 8)]  # qweight [K/8, N]
    nib = lambda k, n: (words[k // 8][n] >> (4 * (k % 8))) & 15
    word_bytes = [b for row in words for w in row for b in w.to_bytes(4, "little")]  # the tensor's memory
    kWRowBytes = kNT
    for k0 in range(0, K, kKT):
        for n0 in range(0, N, kNT):
            tile = bytearray(kKT * kWRowBytes)
            chunks = kKT * kNT // 2 // 16
            for ci in range(chunks):
                row, ch = ci // (kNT // 4), ci % (kNT // 4)
                k, n = k0 + 8 * row, n0 + 4 * ch
                addr = 4 * ((k >> 3) * N + n)  # the fast loader's source (strides in words)
                chunk = word_bytes[addr:addr + 16]
                for e in range(16):  # the element-wise loader's byte
                    kp, ne = k0 // 2 + 4 * row + (e & 3), n0 + 4 * ch + (e >> 2)
                    assert word_bytes[4 * ((kp >> 2) * N + ne) + (kp & 3)] == chunk[e]
                v = [int.from_bytes(bytes(chunk[4 * i:4 * i + 4]), "little") for i in range(4)]
                a0, a1 = byte_perm(v[0], v[1], 0x5140), byte_perm(v[0], v[1], 0x7362)
                b0, b1 = byte_perm(v[2], v[3], 0x5140), byte_perm(v[2], v[3], 0x7362)
                t = [byte_perm(a0, b0, 0x5410), byte_perm(a0, b0, 0x7632), byte_perm(a1, b1, 0x5410),
                     byte_perm(a1, b1, 0x7632)]
                nl = 4 * ch
                for j in range(4):
                    for r, val in ((8 * row + 2 * j, t[j] & 0x0F0F0F0F), (8 * row + 2 * j + 1, (t[j] >> 4) & 0x0F0F0F0F)):
                        at = r * kWRowBytes + wswz(r, nl >> 4) * 16 + (nl & 15)
                        tile[at:at + 4] = val.to_bytes(4, "little")
            for kk in range(kKT):
                for nn in range(kNT):
                    got = tile[kk * kWRowBytes + wswz(kk, nn // 16) * 16 + nn % 16]
                    assert got == nib(k0 + kk, n0 + nn), (k0, kk, n0, nn, got, nib(k0 + kk, n0 + nn))


if __name__ == "__main__":
    random.seed(65)
    check(128, 128, lambda r, c: c ^ (r & 7))  # the mma.sync product's K x N swizzle
    check(128, 64, lambda r, c: c ^ (r & 7))   # 64 k a stage (FX_GEMV_KT=64)
    check(64, 128, lambda r, c: c ^ ((r >> 1) & 3))  # 64 columns (FX_GEMV_NT=64): 64-byte rows
    print("ok")
