"""The accuracy side of issue 7's one contract change left: the 8-bit weight's per-channel scale applied after
the product (x @ w_i8, exact in bf16, times s in f32) instead of eager's dequantized weight rounded to bf16
per element (w_i8.to(bf16) * s). CPU only, float64 arithmetic with explicit bf16 roundings (the product's f32
accumulation taken as exact); relative norm error of each against the float64 chain. bench/gemv/NOTES.md
session 52 has the figures.

  python3 bench/gemv/post_mma_scale_accuracy.py
"""
import torch
torch.manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
def bf(t): return t.to(torch.bfloat16).double()
rows=[]
for M,K,N in [(16,4096,14336),(1,4096,4096),(64,14336,4096)]:
    for trial in range(3):
        x = torch.randn(M,K).to(torch.bfloat16)
        w = torch.randint(-127,128,(K,N),dtype=torch.int8)
        s = ((torch.rand(N)+0.5)/ (64*K**0.5)).to(torch.bfloat16)
        b = torch.randn(N).to(torch.bfloat16)
        xd, wd, sd, bd = x.double(), w.double(), s.double(), b.double()
        ref = xd @ (wd*sd) + bd
        eager_w = bf(wd*sd)                       # eager: w.to(bf16) * s rounded to bf16 per element
        eager = bf(bf(xd @ eager_w) + bd)         # mm (f32 accumulate, ~exact here) rounded, + b rounded
        post = bf(bf((xd @ wd) * sd) + bd)        # post-MMA scale: exact int8 weights, scale after the product
        post1 = bf((xd @ wd) * sd + bd)           # post-MMA with the bias in the same rounding (one rounding)
        rel = lambda y: ((y-ref).norm()/ref.norm()).item()
        rows.append((M,K,N,rel(eager),rel(post),rel(post1), ((eager-post).abs()/ref.abs().clamp_min(1e-3)).max().item()))
for r in rows: print("M=%d K=%d N=%d  eager %.2e  post-MMA %.2e  post-MMA one rounding %.2e" % r[:6])
