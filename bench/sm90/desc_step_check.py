"""CPU check of the Hopper mainloop's descriptor stepping (kernels/sm90_wgmma_gemm.cuh): for every
tile of the autotune table, both B layouts, every stage, k-step, 64-row sub-tile and consumer,
and every 1024-byte-aligned shared base whose ring and staging buffer fit in 227 KB, the
descriptor stepped from stage 0's (its high word | low word + (stage offset + k-step offset) / 16,
the low word's add in 32 bits, the high word the one constant the kernel uses for A and B)
equals make_desc of the address. A Python mirror of the two formulas; the GPU tests and the
differential (tests/GPU_RESULTS.md, session 9: the differential ran the stepping before its
stage-0 words were broadcast, e2c0a4b) check the kernel.

  PYTHONPATH=python python3 bench/sm90/desc_step_check.py
"""


def encode(x):  # desc_encode: the 14-bit field of an address or stride in 16-byte units
    return (x & 0x3FFFF) >> 4


def make_desc(addr, lbo, sbo):  # the template's make_desc (128-byte swizzle, layout 1)
    return encode(addr) | (encode(lbo) << 16) | (encode(sbo) << 32) | (1 << 62)


DESC_HI = make_desc(0, 0, 1024) & ~0xFFFFFFFF  # the kernel's desc_hi, shared by A and B


def stepped(desc0, units):  # desc_hi | (u32)(desc0's low word + step + desc_units(offset))
    return DESC_HI | ((desc0 + units) & 0xFFFFFFFF)


BK = 64


def hopper_tiles():
    """(bm, bn, stages, ping-pong) of every Hopper tile the autotune may pick, read from the
    library (codegen's tile table), so this check follows the table."""
    import re

    import fxfuse._C as C

    spec = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n"
            "%2 = mm %0 %1 : bf16\n%3 = relu %2 : bf16\noutput %3\n")
    tiles = []
    for text in C.kernel_candidates_for_size(spec, 4096, 4096, 4096, 1, "sm_90"):
        if not text.startswith("sm90_wgmma"):
            continue
        m = re.fullmatch(r"sm90_wgmma (\d+)x(\d+)x(\d+) s(\d+) t\d+( pingpong)?", text)
        assert m and int(m.group(3)) == BK, f"a Hopper tile this check does not know: {text}"
        tiles.append((int(m.group(1)), int(m.group(2)), int(m.group(4)), bool(m.group(5))))
    assert tiles, "no Hopper tile among the candidates"
    return tiles

STAGING = 2 * 4 * 16 * 144  # FX_STAGE_BYTES for two consumer warpgroups


def main():
    checked = bad = 0
    for bm, bn, stages, pingpong in hopper_tiles():
        sub_tiles = bm // 64 if pingpong else 1
        a_bytes, stage_bytes = bm * BK * 2, (bm + bn) * BK * 2
        for b_kmajor in (False, True):
            lbo_b = 16 if b_kmajor else 64 * BK * 2
            for base in range(0, 1 << 18, 1024):
                if base + stages * stage_bytes + STAGING > 227 * 1024 + 1024:
                    break
                for consumer in range(2):
                    row0 = 0 if pingpong else consumer * 64
                    desc_a0 = make_desc(base + row0 * BK * 2, 16, 1024)
                    desc_b0 = make_desc(base + a_bytes, lbo_b, 1024)
                    for s in range(stages):
                        step = s * (stage_bytes >> 4)
                        s_a = base + s * stage_bytes + row0 * BK * 2
                        s_b = base + s * stage_bytes + a_bytes
                        for kk in range(BK // 16):
                            b_off = kk * 32 if b_kmajor else kk * 16 * 128
                            checked += 1
                            bad += stepped(desc_b0, step + (b_off >> 4)) != make_desc(s_b + b_off, lbo_b, 1024)
                            for sub in range(sub_tiles):
                                a_off = sub * 64 * BK * 2 + kk * 32
                                checked += 1
                                bad += stepped(desc_a0, step + (a_off >> 4)) != make_desc(s_a + a_off, 16, 1024)
    print(f"descriptors checked: {checked}, different from make_desc: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
