"""Session 58: how far the CPU path's former form of a 16-bit F.linear with bias (the f32 product of the upcast
operands plus the bias, rounded once) was from eager's native 16-bit addmm, three random draws per case. The path now
evaluates it as at::addmm (runtime/reference_eval.cpp addmmAdd; tests/python/test_linear_bias_bits.py)."""
import torch

torch.manual_seed(1)
for dt in (torch.bfloat16, torch.float16):
    for M, K, N in ((256, 1024, 512), (256, 2048, 256), (128, 4096, 256)):
        counts = []
        for _ in range(3):
            x = torch.randn(M, K, dtype=dt)
            w = torch.randn(N, K, dtype=dt) / K ** 0.5
            b = torch.randn(N, dtype=dt)
            eager = torch.nn.functional.linear(x, w, b)
            f32_order = (x.float() @ w.float().t() + b.float()).to(dt)
            counts.append(int((eager != f32_order).sum()))
        print(f"{dt} M={M} K={K} N={N}: elements != eager {counts} of {M * N}")
