"""fxfuse backend, bf16 training: the backward's weight-grad mm takes the GELU-backward product
convert(g * gelu'(y)) -> bf16 as its prologue. The bias gradient sum(.., 0) reads the same bf16 value;
once no GEMM reads that buffer, Inductor fuses the pointwise into the sum and drops the bf16 rounding
(emulate_precision_casts=False), so the bias gradient differs from eager's and from plain Inductor's."""
import os, sys
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, torch.nn as nn, torch.nn.functional as F, fxfuse

class M(nn.Module):
    def __init__(s): super().__init__(); s.l = nn.Linear(32, 48)
    def forward(s, x): return F.gelu(s.l(x))

def ulps(a, b):
    ia, ib = a.view(torch.int16).int(), b.view(torch.int16).int()
    mono = lambda i: torch.where(i < 0, -32768 - i, i)
    d = (mono(ia) - mono(ib)).abs()
    return int((a != b).sum()), int(d.max())

torch.manual_seed(0)
ms = [M().bfloat16() for _ in range(3)]
for m in ms[1:]: m.load_state_dict(ms[0].state_dict())
fx = torch.compile(ms[0], backend="fxfuse"); ind = torch.compile(ms[1], backend="inductor")
x = torch.randn(int(sys.argv[1]) if len(sys.argv) > 1 else 8, 32, dtype=torch.bfloat16)   # x does not need grad (first layer)
g = torch.randn(x.shape[0], 48, dtype=torch.bfloat16)
for f in (fx, ind, ms[2]): f(x).backward(g)
print("bias.grad   fxfuse vs eager  (differing, max ulp):", ulps(ms[0].l.bias.grad, ms[2].l.bias.grad))
print("bias.grad   inductor vs eager:", ulps(ms[1].l.bias.grad, ms[2].l.bias.grad))
print("weight.grad fxfuse vs eager:", ulps(ms[0].l.weight.grad, ms[2].l.weight.grad))
ref = (g.double() * torch.func.vjp(lambda y: F.gelu(y), F.linear(x, ms[2].l.weight, ms[2].l.bias).double())[1](torch.ones_like(g).double())[0]).sum(0)
print("bias.grad |err| vs f64 (g*gelu' summed): fxfuse %.3e eager %.3e" % ((ms[0].l.bias.grad.double()-ref).abs().max(), (ms[2].l.bias.grad.double()-ref).abs().max()))
print(fxfuse.report())
