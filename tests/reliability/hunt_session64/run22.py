import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import time
torch.manual_seed(0)
m = Q(256, 64, 64, bias=True)
x = torch.randn(3, 256).half()
want = m(x)
for be in ("inductor", "fxfuse"):
    torch._dynamo.reset()
    c = torch.compile(m, backend=be)
    got = c(x)
    print(be, "equal:", torch.equal(got, want), "maxdiff", (got.float() - want.float()).abs().max().item())
torch._dynamo.reset()
try:
    rep = fxfuse.report(m, x) 
except Exception as e:
    rep = f"report(m, x) n/a: {e}"
print(rep)
