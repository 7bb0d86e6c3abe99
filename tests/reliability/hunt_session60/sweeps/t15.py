import sys, tempfile, os; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
from t1lib import Lin
torch.manual_seed(9)
bf=torch.bfloat16
for N,K,G in [(40,144,48),(40,288,96),(40,96,3),(8,6,3),(1,64,2),(40,4096,128),(40,128,128)]:
    m=Lin(N,K,G); check(f"N={N} K={K} G={G}", m, lambda:(torch.randn(3,K).to(bf),))
# save/load with dynamic batch
m=Lin(40,128,32); bd=torch.export.Dim("b",min=2,max=64)
ep2=check("dyn for save", m, lambda:(torch.randn(5,128).to(bf),), dyn=({0:bd},))
p=tempfile.mktemp(suffix=".pt2"); torch.export.save(ep2,p); ld=torch.export.load(p)
for b in (2,9,64):
    x=torch.randn(b,128).to(bf); print("loaded dyn b",b,torch.equal(ld.module()(x),m(x)))
# run_decompositions after rewrite
ep3=ep2.run_decompositions(); x=torch.randn(7,128).to(bf); print("decomp after rewrite", torch.equal(ep3.module()(x),m(x)))
# dynamic K: A-side groups with symbolic K
class DK(torch.nn.Module):
    def forward(s,xq,sx,w):
        M,K=xq.shape; G=32
        x=(xq.view(M,K//G,G).to(bf)*sx[:,:,None]).view(M,K)
        return torch.relu(F.linear(x,w))
kd=torch.export.Dim("kk",min=1,max=64)
check("dynamic K (32*kk)", DK(), lambda:(i8(4,128),sc(4,4),torch.randn(16,128).to(bf)), dyn=({1:32*kd},{1:kd},{1:32*kd}))
# AOTI? skip. unlifted module with torch.no_grad and requires_grad input
x=torch.randn(4,128).to(bf).requires_grad_()
try:
    y=ep2.module()(x); print("forward with requires_grad input ok", y.requires_grad)
    y.sum().backward()
except Exception as e: print("backward:", str(e)[:150])
