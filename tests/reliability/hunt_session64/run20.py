import sys, copy; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
class L(torch.nn.Module):
    def __init__(self): super().__init__(); self.l = torch.nn.Linear(64, 32)
    def forward(self, x): return torch.relu(self.l(x))
for name, model, x in [("gptq", Q(256, 64, 64, bias=True), torch.randn(3, 256).half()), ("linear", L(), torch.randn(4, 64))]:
    for rw in (False, True):
        ep = torch.export.export(model, (x,))
        if rw: ep = fxfuse.rewrite(ep)
        torch.export.unflatten(ep)
        try:
            copy.deepcopy(ep.module()); print(name, "rewrite" if rw else "plain", "unflatten then deepcopy ok")
        except Exception as e:
            print(name, "rewrite" if rw else "plain", "unflatten then deepcopy FAIL")
            m = ep.module()
            from torch._subclasses.fake_tensor import FakeTensor
            def find(o, path, depth, seen):
                if depth > 12 or id(o) in seen: return
                seen.add(id(o))
                if isinstance(o, FakeTensor): print("   FAKE", path); return
                if isinstance(o, torch.Tensor): return
                if isinstance(o, dict): it = o.items()
                elif isinstance(o, (list, tuple)): it = enumerate(o)
                elif hasattr(o, "__dict__") and not isinstance(o, type): it = vars(o).items()
                else: return
                for k, v in list(it): find(v, f"{path}.{k}", depth + 1, seen)
            find(m, "m", 0, set())
            find(ep, "ep", 0, set())
