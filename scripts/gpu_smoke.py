"""One chain per kernel variant on the GPU, each in its own process (an illegal address in one
does not hide the others): relative error against float64, outputs poisoned first.

  FXFUSE_POISON_OUTPUTS=1 python scripts/gpu_smoke.py
"""
import subprocess
import sys

CASE = r'''
import sys, torch, fxfuse
M, K, N, dt, blayout, wq = {M}, {K}, {N}, torch.{dt}, "{blayout}", "{wq}"
torch.manual_seed(M * 7 + N)
d = {{"bfloat16": "bf16", "float16": "f16", "float32": "f32"}}[str(dt).split(".")[-1]]
x = torch.randn(M, K, device="cuda", dtype=dt)
b = torch.randn(N, device="cuda", dtype=dt)
if wq == "i8":
    wraw = torch.randint(-127, 127, (N, K), device="cuda", dtype=torch.int8)
    s = (torch.rand(N, device="cuda", dtype=dt) + 0.5) / 64
    spec = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 {{d}} [m,k]\n%1 = input 1 i8 [n,k]\n%2 = convert %1 : {{d}}\n"
            "%3 = input 2 {{d}} [n]\n%4 = mul %2 %3 : {{d}}\n%5 = mm %0 %4 : {{d}}\n%6 = input 3 {{d}} [n]\n"
            "%7 = add %5 %6 : {{d}}\noutput %7\n").format(d=d)
    ins = [x, wraw, s, b]
    w = (wraw.double() * s.double()[:, None]).t()  # s scales output channels (rows of wraw)
    ref = x.double() @ w + b.double()
else:
    w = torch.randn(K, N, device="cuda", dtype=dt) / K ** 0.5
    wt = w if blayout == "kn" else w.t().contiguous()
    dims = "[k,n]" if blayout == "kn" else "[n,k]"
    spec = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 {{d}} [m,k]\n%1 = input 1 {{d}} {{dims}}\n%2 = mm %0 %1 : f32\n"
            "%3 = input 2 {{d}} [n]\n%4 = add %2 %3 : {{d}}\n%5 = gelu_tanh %4 : {{d}}\noutput %5\n").format(d=d, dims=dims)
    ins = [x, wt, b]
    ref = torch.nn.functional.gelu(x.double() @ w.double() + b.double(), approximate="tanh")
y = torch.ops.fxfuse.gemm_chain(ins, spec)[0]
torch.cuda.synchronize()
err = ((y.double() - ref).norm() / ref.norm()).item()
st = fxfuse._C.stats()
print(f"RESULT {{M}}x{{K}}x{{N}} {{d}} {{blayout}} {{wq}} relerr={{err:.2e}} nan={{torch.isnan(y).any().item()}} fallbacks={{st.get('fallbacks')}} variants={{ {{k: v for k, v in st.items() if 'variant' in k or 'launch' in k}} }}")
sys.exit(0 if err < 2e-2 and not torch.isnan(y).any() else 1)
'''

CASES = [
    (256, 128, 64, "bfloat16", "kn", "-"), (4096, 4096, 4096, "bfloat16", "kn", "-"),
    (4096, 4096, 4096, "bfloat16", "nk", "-"), (1000, 520, 776, "float16", "kn", "-"),
    (1, 4096, 4096, "bfloat16", "kn", "-"), (16, 4096, 14336, "bfloat16", "nk", "-"),
    (16, 4096, 14336, "bfloat16", "-", "i8"), (64, 4096, 4096, "bfloat16", "kn", "-"),
    (100, 72, 40, "float32", "kn", "-"), (7, 33, 24, "bfloat16", "kn", "-"),
]

bad = 0
for c in CASES:
    src = CASE.format(M=c[0], K=c[1], N=c[2], dt=c[3], blayout=c[4], wq=c[5])
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300)
    line = [l for l in r.stdout.splitlines() if l.startswith("RESULT")]
    print(("ok  " if r.returncode == 0 else "BAD ") + (line[0] if line else f"{c} crashed: {r.stderr.strip().splitlines()[-1:]}"))
    bad += r.returncode != 0
sys.exit(1 if bad else 0)
