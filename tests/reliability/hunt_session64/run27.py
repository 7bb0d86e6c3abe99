import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
import torch.nn.functional as F
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]
class AWQ(torch.nn.Module):
    """autoawq dequantize_gemm (torch): qweight int32 [K, N/8] (n packed), qzeros [K/G, N/8], scales [K/G, N]"""
    def __init__(self, K=256, N=64, G=64, reorder=True, kind="awq"):
        super().__init__()
        self.K, self.N, self.G, self.reorder, self.kind = K, N, G, reorder, kind
        self.register_buffer("qweight", rand_int32(K, N // 8))
        self.register_buffer("qzeros", rand_int32(K // G, N // 8))
        self.register_buffer("scales", (torch.rand(K // G, N) * 0.02 + 0.001).half())
    def unpack(self, q):
        shifts = torch.arange(0, 32, 4, device=q.device)
        iw = torch.bitwise_right_shift(q[:, :, None], shifts[None, None, :]).to(torch.int8)
        if self.kind == "mask_first":
            iw = iw & 15
        iw = iw.view(iw.shape[0], -1)
        if self.reorder:
            order = torch.arange(iw.shape[-1], dtype=torch.int32, device=iw.device).view(-1, 8)[:, AWQ_REVERSE_ORDER].view(-1)
            iw = iw[:, order]
        return torch.bitwise_and(iw, 15)
    def forward(self, x):
        iw, iz = self.unpack(self.qweight), self.unpack(self.qzeros)
        sc = self.scales.repeat_interleave(self.G, dim=0)
        iz = iz.repeat_interleave(self.G, dim=0)
        W = (iw - iz) * sc
        return torch.matmul(x, W)
check("AWQ dequantize_gemm", AWQ(), X(3, 256))
check("AWQ no reorder", AWQ(reorder=False), X(3, 256))
check("AWQ no reorder & before view", AWQ(reorder=False, kind="mask_first"), X(3, 256), show_spec=True)
# n-packed with arange shifts, in GPTQ form: q [K, N/8] -> unsqueeze(2) >> arange -> & 15 -> reshape [K, N]  (packed along n)
class NPacked(torch.nn.Module):
    def __init__(self, K=256, N=64, G=64):
        super().__init__()
        self.K, self.N = K, N
        self.register_buffer("qweight", rand_int32(K, N // 8))
        self.register_buffer("scales", (torch.rand(K // G, N) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
    def forward(self, x):
        w = (torch.bitwise_right_shift(self.qweight.unsqueeze(2), self.wf.unsqueeze(0)).to(torch.int8) & 15).reshape(self.K, self.N)
        return x @ (self.scales[self.g_idx.long()] * (w - 8)).half()
check("n-packed words GPTQ-form", NPacked(), X(3, 256), show_spec=True)
# K == N: n-packed where dims are the same size (letters could be confused)
check("n-packed words K==N", NPacked(256, 256, 64), X(3, 256), show_spec=True)
