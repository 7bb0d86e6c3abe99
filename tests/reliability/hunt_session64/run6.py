import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
f16 = torch.float16
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)

class GConv(Q):
    """g_idx through a narrowing conversion before indexing"""
    def __init__(self, *a, gconv=None, **k):
        super().__init__(*a, **k); self.gconv = gconv
    def weight(self):
        z = self._unpack(self.qzeros, 2, self.zdq).reshape(self.scales.shape)
        w = self._unpack(self.qweight, 1, self.dq)
        w = w.reshape(-1, w.shape[2])
        g = self.g_idx
        for d in self.gconv:
            g = g.to(d)
        return self.scales[g] * (w - z[g])
i8, i16, i32, i64 = torch.int8, torch.int16, torch.int32, torch.int64
check("g_idx .to(int8).long() 512 groups", GConv(1024, 32, 2, gconv=[i8, i64]), X(2, 1024), show_spec=True)
check("g_idx .to(int8) 512 groups", GConv(1024, 32, 2, gconv=[i8]), X(2, 1024))
check("g_idx .to(int8) 256 groups", GConv(1024, 32, 4, gconv=[i8]), X(2, 1024))
check("g_idx .to(int8) 200 groups ragged", GConv(1000, 32, 5, gconv=[i8]), X(2, 1000))
check("g_idx .to(int8) 160 groups", GConv(640, 32, 4, gconv=[i8]), X(2, 640))
check("g_idx int64 .to(int32)", GConv(1024, 32, 2, gidx_dtype=i64, gconv=[i32]), X(2, 1024))
check("g_idx .to(uint8).long() 512", GConv(1024, 32, 2, gconv=[torch.uint8, i64]), X(2, 1024))
check("g_idx .to(int16).to(int8).to(int64)", GConv(1024, 32, 2, gconv=[i16, i8, i64]), X(2, 1024))
check("g_idx .to(bool)?? skip", GConv(256, 32, 64, gconv=[i64]), X(2, 256))
