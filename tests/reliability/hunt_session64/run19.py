import sys, copy; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
step = sys.argv[1]
model = Q(256, 64, 64, bias=True)
x = torch.randn(3, 256).half()
ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
if step == "decomp":
    ep2.run_decompositions()
elif step == "reexport":
    torch.export.export(ep2.module(), (x,))
elif step == "unflatten":
    torch.export.unflatten(ep2)
elif step == "plain_reexport":
    ep = torch.export.export(model, (x,))
    torch.export.export(ep.module(), (x,))
    ep2 = ep
try:
    m = ep2.module(); copy.deepcopy(m); print(step, "deepcopy ok")
except Exception as e:
    print(step, "deepcopy FAIL", str(e)[:80])
    from torch._subclasses.fake_tensor import FakeTensor
    for n in m.graph.nodes:
        for k, v in n.meta.items():
            if isinstance(v, FakeTensor) and k != "val":
                print("  fake in meta", n.name, k)
    for n, b in list(m.named_buffers()) + list(m.named_parameters()):
        if isinstance(b, FakeTensor) or type(b) is not torch.Tensor and type(b) is not torch.nn.Parameter:
            print("  buffer", n, type(b))
    for k, v in vars(m).items():
        if isinstance(v, FakeTensor): print("  attr", k)
