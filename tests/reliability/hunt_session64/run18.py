import sys, copy; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
model = Q(256, 64, 64, bias=True)
x = torch.randn(3, 256).half()
ep = torch.export.export(model, (x,))
try:
    copy.deepcopy(ep.module()); print("deepcopy plain ok")
except Exception as e:
    print("deepcopy plain FAIL", str(e)[:100])
ep2 = fxfuse.rewrite(ep)
try:
    copy.deepcopy(ep2.module()); print("deepcopy rewritten ok")
except Exception as e:
    print("deepcopy rewritten FAIL", str(e)[:100])
# where are the fake tensors?
gm = ep2.module()
from torch._subclasses.fake_tensor import FakeTensor
def walk(o, path, seen, depth=0):
    if id(o) in seen or depth > 8: return
    seen.add(id(o))
    if isinstance(o, FakeTensor):
        print("FAKE at", path); return
    if isinstance(o, dict):
        for k, v in o.items(): walk(v, f"{path}[{k!r}]", seen, depth + 1)
    elif isinstance(o, (list, tuple)):
        for i, v in enumerate(o): walk(v, f"{path}[{i}]", seen, depth + 1)
    elif hasattr(o, "__dict__") and not isinstance(o, (torch.Tensor, type)) and not callable(o) or isinstance(o, torch.nn.Module):
        try:
            for k, v in vars(o).items(): walk(v, f"{path}.{k}", seen, depth + 1)
        except TypeError: pass
walk(gm.__dict__, "gm", set())
for n in gm.graph.nodes:
    for k, v in n.meta.items():
        pass
# also plain model with a non-fxfuse op
# and check a model with a plain F.linear (no gptq)
class L(torch.nn.Module):
    def __init__(self): super().__init__(); self.l = torch.nn.Linear(64, 32)
    def forward(self, x): return torch.relu(self.l(x))
ep3 = fxfuse.rewrite(torch.export.export(L(), (torch.randn(4, 64),)))
try:
    copy.deepcopy(ep3.module()); print("deepcopy rewritten plain Linear ok", len(specs(ep3)))
except Exception as e:
    print("deepcopy rewritten plain Linear FAIL", str(e)[:100], len(specs(ep3)))
