import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)

class Shared(torch.nn.Module):
    """several GPTQ layers sharing one wf buffer (registered on the parent, and aliased into children)"""
    def __init__(self, mode):
        super().__init__()
        self.a = Q(256, 128, 64, seed=1)
        self.b = Q(128, 64, 32, seed=2)
        self.c = Q(64, 64, 64, seed=3, bias=True)
        if mode == "alias":
            self.b.wf = self.a.wf; self.c.wf = self.a.wf
        elif mode == "parent":
            self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
            for m in (self.a, self.b, self.c):
                del m._buffers["wf"]; m.wf_mode = "attr"; object.__setattr__(m, "wf", self.wf)
    def forward(self, x):
        return self.c(F.silu(self.b(torch.relu(self.a(x)))))
check("3 layers own wf", Shared("own"), X(3, 256))
check("3 layers aliased wf buffer", Shared("alias"), X(3, 256), show_spec=False)
check("3 layers parent wf", Shared("parent"), X(3, 256))

class Twice(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.q = Q(128, 128, 32, bias=True)
    def forward(self, x):
        return self.q(torch.tanh(self.q(x)))
check("layer used twice", Twice(), X(3, 128))

class TwoOut(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.q = Q(256, 64, 64)
    def forward(self, x):
        W = self.q.weight().to(x.dtype)
        return x @ W, W
check("W returned as 2nd output", TwoOut(), X(3, 256), show_spec=True)

class TwoOutPre(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.q = Q(256, 64, 64)
    def forward(self, x):
        W = self.q.weight()
        return x @ W.to(x.dtype), W
check("W (pre-cast) returned as 2nd output", TwoOutPre(), X(3, 256))

class Epi(torch.nn.Module):
    def __init__(self, kind):
        super().__init__(); self.q = Q(256, 256, 64, bias=True); self.kind = kind
    def forward(self, x):
        y = self.q(x)
        if self.kind == "relu": return torch.relu(y)
        if self.kind == "gelu": return F.gelu(y)
        if self.kind == "gelu_tanh": return F.gelu(y, approximate="tanh")
        if self.kind == "residual": return y + x
        if self.kind == "silu_mul": return F.silu(y) * x
        if self.kind == "scale": return y * 0.5 + 1.0
        if self.kind == "float": return y.float()
check("epilogue relu", Epi("relu"), X(3, 256))
check("epilogue gelu", Epi("gelu"), X(3, 256))
check("epilogue gelu tanh", Epi("gelu_tanh"), X(3, 256))
check("epilogue residual", Epi("residual"), X(3, 256))
check("epilogue silu*x", Epi("silu_mul"), X(2, 3, 256))
check("epilogue scale", Epi("scale"), X(3, 256))
check("epilogue float()", Epi("float"), X(3, 256))
check("epilogue relu bf16", Epi("relu"), X(3, 256, dt=bf16))

# dynamic batch
from torch.export import Dim
b = Dim("b", min=1, max=64)
q = Q(256, 64, 64, bias=True)
r = check("dynamic batch", q, X(5, 256), dynamic_shapes={"x": {0: b}})
if r:
    mod = r[2]
    for M in (1, 2, 17, 64):
        x = torch.randn(M, 256).half()
        print("   dyn M", M, torch.equal(mod(x), q(x)))
s = Dim("s", min=2, max=32)
q3 = Q(256, 64, 64)
r = check("dynamic batch+seq 3-D", q3, X(2, 5, 256), dynamic_shapes={"x": {0: b, 1: s}})
if r:
    mod = r[2]
    for shp in ((1, 2), (3, 7), (4, 32)):
        x = torch.randn(*shp, 256).half()
        print("   dyn", shp, torch.equal(mod(x), q3(x)))
