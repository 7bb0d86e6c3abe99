#!/usr/bin/env python3
"""Prints the wgmma m64nNk16 wrappers pasted into codegen/kernels/sm90_wgmma_gemm.cuh
(between the GENERATED markers).  Usage: python3 gen_wgmma.py > /tmp/w.txt"""
NS = [128, 256]
out = []
for n in NS:
    nr = n // 2
    for ty in ["bf16", "f16"]:
        regs = ", ".join(f"%{i}" for i in range(nr))
        out.append(f"template <int TB> __device__ __forceinline__ void wgmma_m64n{n}_{ty}(float (&d)[{nr}], u64 da, u64 db, int scale_d) {{")
        out.append(f"  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nr+2}, 0;\\n\"")
        out.append(f"      \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{regs}}}, %{nr}, %{nr+1}, p, 1, 1, 0, %{nr+3};\\n}}\\n\"")
        cons = []
        for i in range(nr):
            cons.append(f"\"+f\"(d[{i}])")
        lines = []
        for i in range(0, nr, 8):
            lines.append("        " + ", ".join(cons[i:i+8]))
        out.append("      : " + ",\n".join(lines).lstrip())
        out.append("      : \"l\"(da), \"l\"(db), \"r\"(scale_d), \"n\"(TB));")
        out.append("}")
print("\n".join(out))
