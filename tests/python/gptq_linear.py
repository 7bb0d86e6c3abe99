"""GPTQ's linear layer with its own int32 storage, dequantized in torch as GPTQ's torch kernel does (written from the
format's description: gptqmodel's TorchQuantLinear, bits = 4): qweight int32 [K/8, N] (eight 4-bit values of k to a
word, low first), qzeros int32 [K/G, N/8] (eight zero points of n to a word), scales [K/G, N], g_idx int32 [K] (k's
group: k // G, or a permutation's under act-order), wf int32 [1, 8] = 0, 4, .., 28 (the shifts, a non-persistent
buffer). Used by tests/python/test_gptq_storage.py and bench/bench_decode.py-style scripts."""
from __future__ import annotations

import torch


class GPTQLinear(torch.nn.Module):
    def __init__(self, K: int, N: int, G: int, dtype=torch.float16, device="cpu", act_order: bool = False,
                 bias: bool = False, symmetric: bool = False):
        super().__init__()
        self.K, self.N, self.G, self.dtype = K, N, G, dtype
        self.symmetric = symmetric  # GPTQ's sym=True checkpoints: `w - 8` in place of the zero points
        full = dict(dtype=torch.int32, device=device)
        # every bit pattern: each nibble 0..15, the sign bit too (the top nibble's arithmetic shift)
        self.register_buffer("qweight", torch.randint(-2**31, 2**31 - 1, (K // 8, N), **full))
        self.register_buffer("qzeros", torch.randint(-2**31, 2**31 - 1, (K // G, N // 8), **full))
        s = (torch.rand(K // G, N, device=device) * 0.02 + 0.001) * torch.where(
            torch.rand(K // G, N, device=device) < 0.5, -1, 1)  # never zero, both signs
        self.register_buffer("scales", s.to(dtype))
        g_idx = torch.arange(K, device=device, dtype=torch.int32) // G
        if act_order:
            g_idx = g_idx[torch.randperm(K, device=device)]
        self.register_buffer("g_idx", g_idx)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32, device=device).unsqueeze(0),
                             persistent=False)
        self.bias = torch.nn.Parameter(torch.randn(N, device=device).to(dtype)) if bias else None

    def weight(self) -> torch.Tensor:
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        w = torch.bitwise_and(w.to(torch.int8), 15)
        w = w.reshape(w.shape[0] * w.shape[1], w.shape[2])
        g = self.g_idx.long()
        if self.symmetric:
            return self.scales[g] * (w - 8)
        zeros = torch.bitwise_right_shift(torch.unsqueeze(self.qzeros, 2).expand(-1, -1, 8), self.wf.unsqueeze(0))
        zeros = torch.bitwise_and(zeros.to(torch.int8), 15).reshape(self.scales.shape)
        return self.scales[g] * (w - zeros[g])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.weight().to(x.dtype))
        return y + self.bias if self.bias is not None else y
