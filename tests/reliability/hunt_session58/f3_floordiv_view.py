"""A 3-D linear whose output view has an unsimplified symbolic dim, FloorDiv(s**2, s) or FloorDiv(2*s**2, s), is
not fused: the pass does not see that the view [s, (s**2)//s, N] is the product [s**2, N] ("the epilogue ends at
%view_1 ... which does not keep the output's shape"). Reached (a) under torch.compile(dynamic=True) whenever the
first call has B == S (duck sizing gives one symbol: every later B == S call runs that graph), (b) in
torch.export with dims {0: B, 1: B} or {0: B, 1: 2*B} after run_decompositions(), even with only_profitable=False."""
import os, sys
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, torch.nn as nn, torch.nn.functional as F, fxfuse
from torch.export import Dim

class L(nn.Module):
    def __init__(s): super().__init__(); s.l = nn.Linear(32, 48)
    def forward(s, x): return F.gelu(s.l(x)) + 1

torch.manual_seed(0)
m = L().bfloat16().eval()
fxfuse.reset_stats()
c = torch.compile(m, backend="fxfuse", dynamic=True)
with torch.no_grad():
    for shp in ((2, 2, 32), (3, 5, 32), (4, 4, 32), (8, 8, 32)):
        x = torch.randn(*shp, dtype=torch.bfloat16)
        y, ye = c(x), m(x)
        print("torch.compile", shp, "elements != eager:", int((y != ye).sum()), "of", y.numel())
print(fxfuse.report())

B = Dim("B", min=2, max=512)
for spec, shp in (({0: B, 1: B}, (4, 4, 32)), ({0: B, 1: 2 * B}, (4, 8, 32))):
    ep = torch.export.export(m, (torch.randn(*shp, dtype=torch.bfloat16),), dynamic_shapes={"x": spec}).run_decompositions()
    view = [n for n in ep.graph.nodes if n.name == "view_1"][0]
    fxfuse.reset_stats()
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    print("export", spec, "view_1 shape", tuple(view.meta["val"].shape), "chains_fused", fxfuse.stats()["chains_fused"],
          fxfuse.stats()["rejections"])
