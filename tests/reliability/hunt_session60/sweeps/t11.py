import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hb import *
torch.manual_seed(6)
class P(torch.nn.Module):
    def __init__(s): super().__init__(); s.l=torch.nn.Linear(128,48)
    def forward(s,x): return F.silu(s.l(x))
m=P(); x=torch.randn(6,128)
torch._dynamo.reset()
cm=torch.compile(m, backend=fxfuse.backend_with(only_profitable=False))
with torch.no_grad(): got=cm(x)
want=m(x); print(torch.equal(got,want))
ep2=fxfuse.rewrite(torch.export.export(m,(x,)),only_profitable=False)
print([n.args[1] for n in ep2.graph.nodes if n.target==torch.ops.fxfuse.gemm_chain.default][0])
print("export equal", torch.equal(ep2.module()(x), want))
import torch._inductor.config as c
from torch._inductor import config
# print the post-grad graph spec via report? use fxfuse.report on compile? Just dump via env
