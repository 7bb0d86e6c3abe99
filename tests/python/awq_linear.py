"""AWQ's linear layer with its own int32 storage, dequantized in torch as autoawq's dequantize_gemm does (written from
the format's description): qweight int32 [K, N/8] and qzeros int32 [K/G, N/8] with eight 4-bit values of n to a word
in AWQ's order (column n is the 4-bit value order[n % 8] of word n / 8, bits 4 order[n % 8] and up: the gather below),
scales [K/G, N] broadcast along k by repeat_interleave. `order` is the gather's lifted constant (AWQ's 0 4 1 5 2 6 3
7). Used by tests/python/test_awq_storage.py."""
from __future__ import annotations

import torch

AWQ_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


class AWQLinear(torch.nn.Module):
    def __init__(self, K: int, N: int, G: int, dtype=torch.float16, device="cpu", bias: bool = False,
                 order=AWQ_ORDER):
        super().__init__()
        self.K, self.N, self.G, self.order = K, N, G, list(order)
        full = dict(dtype=torch.int32, device=device)
        # every bit pattern: each nibble 0..15, the sign bit too (the top nibble's arithmetic shift)
        self.register_buffer("qweight", torch.randint(-2**31, 2**31 - 1, (K, N // 8), **full))
        self.register_buffer("qzeros", torch.randint(-2**31, 2**31 - 1, (K // G, N // 8), **full))
        s = (torch.rand(K // G, N, device=device) * 0.02 + 0.001) * torch.where(
            torch.rand(K // G, N, device=device) < 0.5, -1, 1)  # never zero, both signs
        self.register_buffer("scales", s.to(dtype))
        self.bias = torch.nn.Parameter(torch.randn(N, device=device).to(dtype)) if bias else None

    def weight(self) -> torch.Tensor:
        shifts = torch.arange(0, 32, 4, device=self.qweight.device)
        iw = torch.bitwise_right_shift(self.qweight[:, :, None], shifts[None, None, :]).to(torch.int8)
        iw = iw.view(iw.shape[0], -1)
        iz = torch.bitwise_right_shift(self.qzeros[:, :, None], shifts[None, None, :]).to(torch.int8)
        iz = iz.view(iz.shape[0], -1)
        order = torch.arange(iw.shape[-1], dtype=torch.int32, device=iw.device).view(-1, 8)[:, self.order].view(-1)
        iw, iz = torch.bitwise_and(iw[:, order], 15), torch.bitwise_and(iz[:, order], 15)
        return (iw - iz.repeat_interleave(self.G, 0)) * self.scales.repeat_interleave(self.G, 0)

    def forward(self, x):
        y = x @ self.weight()
        return y + self.bias if self.bias is not None else y
