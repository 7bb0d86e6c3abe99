import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
f16 = torch.float16
i8, i16, i32, i64 = torch.int8, torch.int16, torch.int32, torch.int64
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)

class WF(torch.nn.Module):
    """wf in other dtypes / shapes"""
    def __init__(self, K, N, G, wf, how, qdtype=torch.int32):
        super().__init__()
        self.K, self.N, self.G = K, N, G
        self.register_buffer("qweight", rand_int32(K // 8, N).to(qdtype) if qdtype != torch.uint32 else rand_int32(K//8, N).view(torch.uint32))
        self.register_buffer("zeros", torch.randint(0, 16, (K // G, N), dtype=torch.int8))
        self.register_buffer("scales", (torch.rand(K // G, N) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", wf, persistent=False)
        self.how = how
    def forward(self, x):
        if self.how == "1d":      # wf [8] -> view(8, 1)
            sh = self.wf.view(8, 1)
        elif self.how == "col":   # wf stored [8, 1]
            sh = self.wf
        elif self.how == "2d":
            sh = self.wf.unsqueeze(-1)
        elif self.how == "bcast": # no expand: rely on broadcasting
            sh = self.wf.view(1, 8, 1)
        if self.how == "bcast":
            w = self.qweight.unsqueeze(1) >> sh
        else:
            w = torch.bitwise_right_shift(self.qweight.unsqueeze(1).expand(-1, 8, -1), sh)
        w = (w.to(torch.int8) & 15).reshape(self.K, self.N)
        g = self.g_idx.long()
        return x @ (self.scales[g] * (w - (self.zeros & 15)[g])).half()
wf = torch.arange(0, 32, 4)
check("wf int64 [1,8]", WF(256, 64, 64, wf.unsqueeze(0), "2d"), X(3, 256), show_spec=True)
check("wf int32 [8] view(8,1)", WF(256, 64, 64, wf.int(), "1d"), X(3, 256))
check("wf int32 [8,1]", WF(256, 64, 64, wf.int().view(8, 1), "col"), X(3, 256))
check("wf int32 broadcast no expand", WF(256, 64, 64, wf.int(), "bcast"), X(3, 256), show_spec=True)
check("wf int8 [1,8]", WF(256, 64, 64, wf.to(torch.int8).unsqueeze(0), "2d"), X(3, 256))
check("wf int16 [1,8]", WF(256, 64, 64, wf.to(torch.int16).unsqueeze(0), "2d"), X(3, 256))
check("wf uint8 [1,8]", WF(256, 64, 64, wf.to(torch.uint8).unsqueeze(0), "2d"), X(3, 256))
check("qweight int64", WF(256, 64, 64, wf.int().unsqueeze(0), "2d", qdtype=torch.int64), X(3, 256), show_spec=True)
check("wf [1,8] with 32 (>=width)", WF(256, 64, 64, torch.tensor([[0,4,8,12,16,20,24,32]], dtype=torch.int32), "2d"), X(3, 256))
check("wf negative shift", WF(256, 64, 64, torch.tensor([[0,4,8,12,16,20,24,-4]], dtype=torch.int32), "2d"), X(3, 256))
