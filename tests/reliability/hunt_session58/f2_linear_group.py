"""decomposed_groups names aten.linear's own decomposition (mm -> view -> add(bias), what Inductor writes for a
3-D linear whose input is not contiguous: a slice x[:, 1:], a transpose) as an eager op whose 16-bit
intermediate eager does not round. Eager's F.linear on such an input DOES round: matmul, then add_(bias).
So the chain is refused (bare GEMM, reason no_epilogue_no_prologue "...a step of one eager op whose 16-bit
intermediates eager does not round") and the output is Inductor's, off eager's bits; with the group check
bypassed the same chain fuses and gives eager's bits. Static and dynamic shapes, inference and training."""
import os, sys
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, torch.nn as nn, torch.nn.functional as F, fxfuse
import fxfuse.backend as be

class M(nn.Module):
    def __init__(s): super().__init__(); s.l = nn.Linear(32, 48)
    def forward(s, x): return F.gelu(s.l(x[:, 1:]), approximate="tanh")   # also: s.l(x.transpose(0, 1))

def diff(a, b):
    return int((a != b).sum()), a.numel()

torch.manual_seed(0)
m = M().bfloat16()
x = torch.randn(4, 16, 32, dtype=torch.bfloat16)
print("eager F.linear(x[:,1:]) == round(x[:,1:] @ W.T) + b :", torch.equal(m.l(x[:, 1:]), torch.matmul(x[:, 1:], m.l.weight.t()) + m.l.bias))
orig = be.decomposed_groups.unrounded_groups
for label in ("as shipped", "unrounded_groups bypassed"):
    if label != "as shipped":
        be.decomposed_groups.unrounded_groups = lambda g: []
    for dyn in (False, True):
        torch._dynamo.reset(); fxfuse.reset_stats()
        c = torch.compile(m, backend="fxfuse", dynamic=dyn)
        with torch.no_grad():
            y, ye = c(x), m(x)
        line = [l.strip() for l in str(fxfuse.report()).splitlines() if l.strip().startswith(("mm", "addmm"))][0]
        print(f"[{label}, dynamic={dyn}] differing from eager: {diff(y, ye)}  max |diff| {float((y.float()-ye.float()).abs().max()):.3g}\n    {line[:200]}")
be.decomposed_groups.unrounded_groups = orig
