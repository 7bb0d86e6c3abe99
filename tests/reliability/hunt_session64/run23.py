import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
import torch.nn.functional as F
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
class NK(torch.nn.Module):
    """storage packed along k in the LAST dim: qweight [N, K/8], scales [N, K/G], weight [N, K] for F.linear"""
    def __init__(self, K=256, N=64, G=64, kind="linear", bias=False):
        super().__init__()
        self.K, self.N, self.G, self.kind = K, N, G, kind
        self.register_buffer("qweight", rand_int32(N, K // 8))
        self.register_buffer("qzeros", rand_int32(N // 8, K // G))
        self.register_buffer("scales", (torch.rand(N, K // G) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32), persistent=False)
        self.bias = torch.nn.Parameter(torch.randn(N).half()) if bias else None
    def forward(self, x):
        w = torch.bitwise_right_shift(self.qweight.unsqueeze(-1).expand(-1, -1, 8), self.wf.view(1, 1, 8))
        w = (w.to(torch.int8) & 15).reshape(self.N, self.K)
        z = torch.bitwise_right_shift(self.qzeros.unsqueeze(1).expand(-1, 8, -1), self.wf.view(1, 8, 1))
        z = (z.to(torch.int8) & 15).reshape(self.N, self.K // self.G)
        g = self.g_idx.long()
        W = (self.scales[:, g] * (w - z[:, g])).half()
        if self.kind == "linear":
            return F.linear(x, W, self.bias)
        if self.kind == "matmul_t":
            return x @ W.t()
        if self.kind == "addmm":
            return torch.addmm(self.bias, x, W.t())
check("[N,K/8] storage, F.linear(x, W)", NK(), X(3, 256), show_spec=True)
check("[N,K/8] storage, F.linear bias", NK(bias=True), X(2, 3, 256))
check("[N,K/8] storage, x @ W.t()", NK(kind="matmul_t"), X(3, 256))
check("[N,K/8] storage, addmm", NK(kind="addmm", bias=True), X(3, 256))
check("[N,K/8] storage, K=1024 N=256 G=128", NK(1024, 256, 128, bias=True), X(9, 1024))
