import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
for K, N, G, M in [(256, 64, 1, 3), (240, 64, 24, 5), (320, 72, 40, 7), (576, 40, 96, 2), (1024, 256, 1024, 33),
                   (1024, 256, 128, 65), (1024, 8, 16, 1), (8, 8, 8, 1), (16, 8, 8, 4), (1024, 256, 32, 17)]:
    check(f"K={K} N={N} G={G} M={M}", Q(K, N, G, bias=True), X(M, K), show_report=False)
for dt in (f32, bf16):
    check(f"K=1024 N=256 G=128 M=40 {dt}", Q(1024, 256, 128, sdtype=dt), X(40, 1024, dt=dt), show_report=False)

class MoE(torch.nn.Module):
    def __init__(self, E=3, K=256, N=64, G=64):
        super().__init__()
        self.E, self.K, self.N, self.G = E, K, N, G
        self.register_buffer("qweight", rand_int32(E, K // 8, N))
        self.register_buffer("qzeros", rand_int32(E, K // G, N // 8))
        self.register_buffer("scales", (torch.rand(E, K // G, N) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
    def forward(self, x):  # x [E, M, K]
        w = torch.bitwise_right_shift(self.qweight.unsqueeze(2).expand(-1, -1, 8, -1), self.wf.view(1, 1, 8, 1))
        w = (w.to(torch.int8) & 15).reshape(self.E, self.K, self.N)
        z = torch.bitwise_right_shift(self.qzeros.unsqueeze(3).expand(-1, -1, -1, 8), self.wf.view(1, 1, 1, 8))
        z = (z.to(torch.int8) & 15).reshape(self.E, self.K // self.G, self.N)
        g = self.g_idx.long()
        W = self.scales[:, g] * (w - z[:, g])
        return torch.bmm(x, W.half())
check("MoE bmm experts", MoE(), X(3, 5, 256), show_spec=True)

class ST(torch.nn.Module):   # scales stored [N, K/G] read with scales[:, g_idx].t()
    def __init__(self, K=256, N=64, G=64):
        super().__init__()
        self.K, self.N = K, N
        self.register_buffer("qweight", rand_int32(K // 8, N))
        self.register_buffer("z", torch.randint(-128, 127, (K // G, N), dtype=torch.int8))
        self.register_buffer("st", (torch.rand(N, K // G) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
    def forward(self, x):
        w = (torch.bitwise_right_shift(self.qweight.unsqueeze(1), self.wf.unsqueeze(-1)).to(torch.int8) & 15).reshape(self.K, self.N)
        g = self.g_idx.long()
        return x @ (self.st[:, g].t() * (w - (self.z & 15)[g])).half()
check("scales [N,K/G] read st[:, g].t()", ST(), X(3, 256), show_spec=True)
# K == N square with st[:, g] NOT transposed (n-wise group along n!)
class ST2(ST):
    def forward(self, x):
        w = (torch.bitwise_right_shift(self.qweight.unsqueeze(1), self.wf.unsqueeze(-1)).to(torch.int8) & 15).reshape(self.K, self.N)
        g = self.g_idx.long()
        return x @ (self.st[:, g] * (w - (self.z & 15)[g])).half()
check("K==N st[:, g] (group along n)", ST2(256, 256, 64), X(3, 256), show_spec=True)
