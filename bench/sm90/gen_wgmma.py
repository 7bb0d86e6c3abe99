#!/usr/bin/env python3
"""Prints the wgmma m64nNk16 wrappers pasted into codegen/kernels/sm90_wgmma_gemm.cuh
(between the GENERATED markers): one macro per width whose asm takes the element type as a
string token, and one function per width that picks bf16 or f16 at compile time.
Usage: python3 gen_wgmma.py > /tmp/w.txt"""
NS = [128, 256]
out = []
for n in NS:
    nr = n // 2
    regs = ", ".join(f"%{i}" for i in range(nr))
    cons = [f"\"+f\"(d[{i}])" for i in range(nr)]
    out.append(f"#define FX_WGMMA_M64N{n}(TY) \\")
    out.append(f"  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{nr+2}, 0;\\n\" \\")
    out.append(f"      \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.\" TY \".\" TY \" {{{regs}}}, %{nr}, %{nr+1}, p, 1, 1, 0, %{nr+3};\\n}}\\n\" \\")
    lines = ["        " + ", ".join(cons[i:i + 8]) for i in range(0, nr, 8)]
    out.append("      : " + ", \\\n".join(lines).lstrip() + " \\")
    out.append("      : \"l\"(da), \"l\"(db), \"r\"(scale_d), \"n\"(TB))")
    out.append(f"template <bool BF16, int TB>")
    out.append(f"__device__ __forceinline__ void wgmma_m64n{n}(float (&d)[{nr}], u64 da, u64 db, int scale_d) {{")
    out.append(f"  if constexpr (BF16) FX_WGMMA_M64N{n}(\"bf16\");")
    out.append(f"  else FX_WGMMA_M64N{n}(\"f16\");")
    out.append("}")
print("\n".join(out))
