import torch, torch.nn as nn
AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]
# AWQ's torch dequantization (autoawq dequantize_gemm), written from its description: qweight int32 [K, N/8] (eight
# 4-bit values of n per word, in the order 0 2 4 6 1 3 5 7), qzeros int32 [K/G, N/8], scales f16 [K/G, N].
class AWQ(nn.Module):
    def __init__(s, K, N, G):
        super().__init__()
        s.G = G
        s.register_buffer("qweight", torch.randint(-2**31, 2**31 - 1, (K, N // 8), dtype=torch.int32))
        s.register_buffer("qzeros", torch.randint(-2**31, 2**31 - 1, (K // G, N // 8), dtype=torch.int32))
        s.register_buffer("scales", torch.rand(K // G, N).half() / 50)
    def forward(s, x):
        shifts = torch.arange(0, 32, 4, device=x.device)
        iw = torch.bitwise_right_shift(s.qweight[:, :, None], shifts[None, None, :]).to(torch.int8)
        iw = iw.view(iw.shape[0], -1)
        iz = torch.bitwise_right_shift(s.qzeros[:, :, None], shifts[None, None, :]).to(torch.int8)
        iz = iz.view(iz.shape[0], -1)
        order = torch.arange(iw.shape[-1], dtype=torch.int32, device=x.device).view(-1, 8)[:, AWQ_REVERSE_ORDER].view(-1)
        iz = iz[:, order]; iw = iw[:, order]
        iw = torch.bitwise_and(iw, 15); iz = torch.bitwise_and(iz, 15)
        sc = s.scales.repeat_interleave(s.G, dim=0); iz = iz.repeat_interleave(s.G, dim=0)
        return torch.matmul(x, (iw - iz) * sc)
m = AWQ(256, 64, 128)
x = torch.randn(4, 256).half()
ep = torch.export.export(m, (x,))
print(ep.graph_module.graph)
