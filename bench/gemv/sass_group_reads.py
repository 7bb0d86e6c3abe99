"""The gemv's main loop for the group-wise forms (GPTQ's and AWQ's words with zero points, u8 bytes with a zero point
tensor, group-wise int8 / int4 scales) at 1, 16 and 64 rows, no GPU needed: the kernel fxfuse._C.compile_ptx generates
for sm_90a, ptxas -v (registers, spills) and nvdisasm (the instructions, LDG, BSSY and IMAD of the stage loop: the
smallest loop with the most HMMAs). bench/gemv/NOTES.md sessions 67-68 (the per-stage scale reads; FX_GEMV_SCALE_SHFL).

    FXFUSE_COMPILE_IN_PROCESS=1 [FXFUSE_GEMV_SCALE_SHFL=0|1] PYTHONPATH=python python3 bench/gemv/sass_group_reads.py
(nvdisasm: FXFUSE_NVDISASM, else on PATH, else the nvidia-cuda-nvdisasm wheel's.)
"""
import glob
import os
import re
import shutil
import subprocess

import fxfuse._C as C

ND = os.environ.get("FXFUSE_NVDISASM") or shutil.which("nvdisasm") or next(
    iter(glob.glob(os.path.join(os.path.dirname(os.__file__), "site-packages", "nvidia", "cu13", "bin", "nvdisasm"))), "nvdisasm")
specs={"gptq_zeros":"tests/codegen/specs/gptq_words_packed_zero_points_bias.spec",
       "awq":"tests/codegen/specs/awq_words_order_group_scale_bias.spec",
       "u8_zeros":"tests/codegen/specs/int4_u8_group_wise_zero_point_bias_gelu.spec", "i8_group":"tests/codegen/specs/gemv_int8_group_wise_scale_bias.spec", "int4_group":"tests/codegen/specs/gemv_int4_linear_group_scale_bias.spec"}
def loop_stats(sass):
    labels={}
    for i,l in enumerate(sass):
        m=re.match(r"^(\.L_x_\d+):",l.strip())
        if m: labels[m.group(1)]=i
    best=None
    for i,l in enumerate(sass):
        m=re.search(r"BRA `\((\.L_x_\d+)\)",l)
        if m and m.group(1) in labels and labels[m.group(1)]<i:
            body=sass[labels[m.group(1)]:i+1]
            mma=sum(1 for b in body if "HMMA" in b or "HGMMA" in b)
            if best is None or mma>best[0] or (mma==best[0] and len(body)<best[1]):
                best=(mma,len(body),body)
    if not best: return None
    body=[b for b in best[2] if re.search(r"/\*[0-9a-f]{4}\*/",b)]
    return len(body), sum("LDG" in b for b in body), sum("BSSY" in b for b in body), sum("IMAD" in b for b in body)
for name, path in specs.items():
    spec=open(path).read()
    for M,N,K in ((1,14336,4096),(16,14336,4096),(64,14336,4096),(64,4096,14336)):
        ptx=C.compile_ptx(spec,M,N,K,"sm_90a")
        open('/tmp/kk.ptx','w').write(ptx)
        r=subprocess.run(["ptxas","-arch=sm_90a","-v","/tmp/kk.ptx","-o","/tmp/kk.cubin"],capture_output=True,text=True)
        regs=re.findall(r"Used (\d+) registers",r.stderr)
        spill=re.findall(r"(\d+) bytes spill stores",r.stderr)
        sass=subprocess.run([ND,"-c","/tmp/kk.cubin"],capture_output=True,text=True).stdout.splitlines()
        st=loop_stats(sass)
        print(f"{name:10s} M={M:2d} {N}x{K}: regs {regs[0] if regs else '?'} spill {max(map(int,spill)) if spill else 0} loop(instr, LDG, BSSY, IMAD) {st}")
