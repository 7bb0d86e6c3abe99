import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
from torch.export import Dim
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
check("M=0 static", Q(256, 64, 64, bias=True), X(0, 256))
check("3-D with 0 batch static", Q(256, 64, 64), X(0, 3, 256))
m = Q(256, 64, 64, bias=True)
b = Dim("b", min=0, max=64)
r = check("dynamic min=0", m, X(4, 256), dynamic_shapes={"x": {0: b}})
if r:
    for M in (0, 1, 2):
        x = torch.randn(M, 256).half()
        try:
            print("   M", M, torch.equal(r[2](x), m(x)))
        except Exception as e:
            print("   M", M, "CRASH", type(e).__name__, str(e)[:200])
# x non-contiguous input
m = Q(256, 64, 64)
ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(3, 256).half(),)))
mod = ep2.module()
xx = torch.randn(256, 3).half().t()
print("non-contig x:", torch.equal(mod(xx), m(xx)))
xx = torch.randn(3, 512).half()[:, ::2]
print("strided x:", torch.equal(mod(xx), m(xx)))
# scales non-contiguous after load (assign)
m2 = ep2.module()
m2.scales = m.scales.t().contiguous().t()
print("non-contig scales:", torch.equal(m2(xx), m(xx)))
m2.qzeros = m.qzeros.t().contiguous().t()
print("non-contig qzeros:", torch.equal(m2(xx), m(xx)))
# special values in scales: inf / nan / -0 / subnormal
m3 = Q(256, 64, 64)
m3.scales[0, 0] = float("inf"); m3.scales[1, 1] = float("nan"); m3.scales[2, 2] = -0.0; m3.scales[3, 3] = 1e-7
ep3 = fxfuse.rewrite(torch.export.export(m3, (torch.randn(3, 256).half(),)))
x = torch.randn(3, 256).half()
g, w = ep3.module()(x), m3(x)
print("special scales: equal_nan", torch.equal(g.isnan(), w.isnan()), torch.equal(torch.nan_to_num(g), torch.nan_to_num(w)))
x[0, 5] = float("inf"); x[1, 7] = float("nan"); x[2, 9] = 65504
g, w = ep3.module()(x), m3(x)
print("special x: ", torch.equal(g.isnan(), w.isnan()), torch.equal(torch.nan_to_num(g), torch.nan_to_num(w)))
