import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
class AC(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.q = Q(256, 64, 64, sdtype=torch.float32)
    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.q(x)
check("autocast bf16 region", AC(), X(3, 256, dt=torch.float32))
class NG(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.q = Q(256, 64, 64)
    def forward(self, x):
        with torch.no_grad():
            return self.q(x)
check("no_grad region", NG(), X(3, 256))
