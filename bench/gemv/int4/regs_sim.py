"""Host check of the packed int4 register forms (kernels/gemv.cuh FX_GEMV_NIBBLE_REGS, session 62): replays the
loader's packed chunks into the slot (packed_offset), then each thread's fragment reads (N x K: compute_stage's
64-bit loads and byte permutes; K x N: nibble_kn_fragments' permuted ldmatrix.x2.trans and byte selects) and checks
that every MMA operand element holds the (k, n) nibble the m16n8k16 MMA expects there, as the 8-bit path's
fragments do: a0 = (row g, k 2t, 2t+1), a1 = (row g+8, same k), a2 = (row g, k 2t+8, 2t+9), a3 = (row g+8, those k),
rows mapped to columns by col_of. N x K: the MMA's k slots map to the thread's 4 consecutive k (lds64 activations).
Also checks each ldmatrix / 64-bit load's bank spread. `python3 regs_sim.py` prints `ok ...` per layout."""
NT, KT, T = 128, 128, 128
KRT = NT // 64


def col_of(w, rt, r, kmajor):
    if not kmajor:
        return w * 16 * KRT + 16 * rt + 2 * (r & 7) + (r >> 3)
    return w * 16 * KRT + rt * 16 + r


def slot_of(kmajor):
    """slot byte -> (packed row, byte along it) of the global packed tile, by the cp.async loader's chunks."""
    slot = {}
    for ci in range(NT * KT // 2 // 16):
        if kmajor:
            row, ch = ci // (KT // 32), ci % (KT // 32)
            off = row * 64 + ((ch ^ (row & 2)) << 4)
            for e in range(16):  # row n, packed byte 16 ch + e: k 2(16ch+e), +1
                slot[off + e] = ("nk", row, 16 * ch + e)
        else:
            row, ch = ci // 8, ci % 8
            off = row * 128 + ((ch ^ (row & 7)) << 4)
            for e in range(16):  # k pair `row`, column 16 ch + e
                slot[off + e] = ("kn", row, 16 * ch + e)
    assert sorted(slot) == list(range(NT * KT // 2))
    return slot


def nibble(entry, which):
    """The (k, n) of the low (which = 0) or high nibble of a slot byte."""
    kind, r, b = entry
    if kind == "nk":
        return (2 * b + which, r)
    return (2 * r + which, b)


def byte_perm(x, y, sel):
    src = x + y  # bytes 0-3 from x, 4-7 from y (lists of per-byte tags)
    return [src[(sel >> (4 * i)) & 7] for i in range(4)]


def shr4(word):
    """word >> 4 as per-byte tags: byte j's low nibble is byte j's high nibble (its high one: byte j+1's low)."""
    return [("hi", b) for b in word]


def lo_nibble(tag):
    if isinstance(tag, tuple) and tag[0] == "hi":
        return nibble(tag[1], 1)
    return nibble(tag, 0)


def check_kn():
    slot = slot_of(False)
    banks_ok = True
    for w in range(4):
        for s in range(KT // 16):
            # ldmatrix x2.trans: lanes 0-15 give row addresses, matrix mi = lanes 8 mi .. 8 mi + 7
            addr = {}
            for lane in range(16):
                i, mi = lane & 7, lane >> 3
                row = 8 * s + (i >> 1) + 4 * (i & 1)
                ch = KRT * w + mi
                addr[(mi, i)] = row * 128 + ((ch ^ (row & 7)) << 4)
            for mi in range(2):
                groups = {(addr[(mi, i)] // 16) % 8 for i in range(8)}
                banks_ok &= len(groups) == 8
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                for rt in range(KRT):
                    # trans: thread gets matrix rows 2t, 2t+1 at 16-bit column g
                    r = []
                    for mrow in (2 * t, 2 * t + 1):
                        base = addr[(rt, mrow)] + 2 * g
                        r += [slot[base], slot[base + 1]]
                    hi = shr4(r)
                    for j, sel in enumerate((0x0400, 0x0501, 0x0602, 0x0703)):
                        b = byte_perm(r, hi, sel)
                        got = (lo_nibble(b[0]), lo_nibble(b[2]))
                        mrow = g + 8 * (j & 1)
                        kk = 16 * s + 2 * t + 8 * (j >> 1)
                        n = col_of(w, rt, mrow, False)
                        assert got == ((kk, n), (kk + 1, n)), (w, s, lane, rt, j, got, (kk, n))
    assert banks_ok, "ldmatrix rows share bank groups"
    print("ok K x N: nibble_kn_fragments' elements and banks")


def check_nk():
    slot = slot_of(True)
    for w in range(4):
        for j in range(2):
            half_banks = {}
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                ch = 4 * j + t
                for rt in range(KRT):
                    for h in range(2):
                        row = col_of(w, rt, g + 8 * h, True)
                        at = row * 64 + (((ch >> 1) ^ (row & 2)) << 4) + 8 * (ch & 1)
                        if rt == 0 and h == 0:
                            half_banks.setdefault(lane >> 4, []).append(at)
                        pw = [[slot[at + 4 * i + q] for q in range(4)] for i in range(2)]
                        words = []
                        for i in range(2):
                            hi = shr4(pw[i])
                            words.append(byte_perm(pw[i], hi, 0x5140))
                            words.append(byte_perm(pw[i], hi, 0x7362))
                        # word q holds k 16 ch + 4q .. + 3 of column `row`, in order
                        for q in range(4):
                            got = [lo_nibble(x) for x in words[q]]
                            want = [(16 * ch + 4 * q + e, row) for e in range(4)]
                            assert got == want, (w, j, lane, rt, h, q, got, want)
            for half, addrs in half_banks.items():  # 16 lanes x 8 bytes: 32 distinct banks
                banks = set()
                for a in addrs:
                    banks |= {(a // 4) % 32, (a // 4 + 1) % 32}
                assert len(banks) == 32, (w, j, half, sorted(banks))
    print("ok N x K: the register words and the 64-bit loads' banks")


check_nk()
check_kn()
