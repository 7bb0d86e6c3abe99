import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
exec(open("./run28.py").read().split("check(")[0].split("torch.manual_seed(0)")[1])
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
for kind in ("out", "inplace"):
    m = GFL(kind=kind)
    x = torch.randn(2, 3, 256).half()
    ep = torch.export.export(m, (x,)).run_decompositions()
    ep2 = fxfuse.rewrite(ep)
    e = fxfuse.report(ep).entries[0]
    xx = torch.randn(2, 3, 256).half()
    print(kind, "after run_decompositions:", torch.equal(ep2.module()(xx), m(xx)), e["chain"], (e.get("prologue_stops") or [""])[0][:100])

class IP(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.register_buffer("qweight", rand_int32(32, 64))
        self.register_buffer("z", torch.randint(0, 16, (4, 64), dtype=torch.int8))
        self.register_buffer("scales", (torch.rand(4, 64) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(256, dtype=torch.int32) // 64)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
        self.bias = torch.nn.Parameter(torch.randn(64).half())
    def forward(self, x):
        w = torch.bitwise_right_shift(self.qweight.unsqueeze(1).expand(-1, 8, -1), self.wf.unsqueeze(-1)).to(torch.int8)
        w = torch.bitwise_and(w, 15).reshape(256, 64)
        g = self.g_idx.long()
        k = self.kind
        if k == "sub_":
            w = w.clone(); w.sub_((self.z & 15)[g]); W = self.scales[g] * w
        else:
            W = self.scales[g] * (w - (self.z & 15)[g])
        if k == "W_mul_":
            W.mul_(2)
        y = x @ W.half()
        if k == "epi_inplace":
            y.add_(self.bias); y.relu_()
        if k == "W_out":
            return y, W
        return y
for k in ("sub_", "W_mul_", "epi_inplace", "W_out"):
    check(f"in-place {k}", IP(k), X(3, 256))
