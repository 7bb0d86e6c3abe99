import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
class GFL(torch.nn.Module):
    """GPTQ-for-LLaMa / AutoGPTQ triton-fallback style with in-place ops and out="""
    def __init__(self, K=256, N=64, G=64, bits=4, kind="out"):
        super().__init__()
        self.K, self.N, self.G, self.bits, self.kind = K, N, G, bits, kind
        self.register_buffer("qweight", rand_int32(K * bits // 32, N))
        self.register_buffer("qzeros", rand_int32(K // G, N * bits // 32))
        self.register_buffer("scales", (torch.rand(K // G, N) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.tensor([i // G for i in range(K)], dtype=torch.int32))
        self.wf = torch.tensor(list(range(0, 32, bits)), dtype=torch.int32).unsqueeze(0)
    def forward(self, x):
        b = self.bits
        zeros = torch.bitwise_right_shift(torch.unsqueeze(self.qzeros, 2).expand(-1, -1, 32 // b), self.wf.unsqueeze(0)).to(torch.int16 if b == 8 else torch.int8)
        if self.kind == "out":
            torch.bitwise_and(zeros, (2 ** b) - 1, out=zeros)
            zeros = zeros + 1
        elif self.kind == "inplace":
            zeros &= (2 ** b) - 1
            zeros += 1
        zeros = zeros.reshape(self.scales.shape)
        weight = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 32 // b, -1), self.wf.unsqueeze(-1)).to(torch.int16 if b == 8 else torch.int8)
        if self.kind == "out":
            torch.bitwise_and(weight, (2 ** b) - 1, out=weight)
        else:
            weight &= (2 ** b) - 1
        weight = weight.reshape(-1, self.N)
        g = self.g_idx.long()
        weight = self.scales[g] * (weight - zeros[g])
        out_shape = x.shape[:-1] + (self.N,)
        out = torch.matmul(x.reshape(-1, x.shape[-1]).half(), weight.half())
        return out.reshape(out_shape)
check("GFL out=", GFL(kind="out"), X(2, 3, 256), show_spec=True)
check("GFL in-place &= +=", GFL(kind="inplace"), X(2, 3, 256))
check("GFL in-place bits=8", GFL(kind="inplace", bits=8), X(2, 3, 256))
check("GFL in-place bits=2", GFL(kind="inplace", bits=2), X(2, 3, 256))
check("GFL x f32 -> half", GFL(kind="inplace"), X(2, 3, 256, dt=torch.float32))
