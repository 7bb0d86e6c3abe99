import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hb import *
torch.manual_seed(12)
bf=torch.bfloat16; f8=torch.float8_e4m3fn
N,K,G=40,256,64
class AG(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(N,K)); s.register_buffer('s',sc(N,K//G))
    def forward(s,xq,sx):
        lead=xq.shape[:-1]
        x=(xq.view(*lead,K//G,G).to(bf)*sx[...,None]).view(*lead,K)
        return F.gelu(F.linear(x,(s.w.view(N,K//G,G).to(bf)*s.s[:,:,None]).view(N,K)),approximate="tanh")
def mk():
    b=torch.randint(2,20,()).item(); return ((torch.randn(b,3,K)*8).to(f8),sc(b,3,K//G))
bcheck("backend dynamic A+B groups", AG(), mk, tries=4, dynamic=True)
def mk2():
    b=torch.randint(2,20,()).item(); return ((torch.randn(b,K)*8).to(f8),sc(b,K//G))
bcheck("backend dynamic A+B groups 2D", AG(), mk2, tries=4, dynamic=True)
# the tanh edge through a group-wise int8 linear: scale 1/64, weight rows one-hot
class Edge(torch.nn.Module):
    def __init__(s):
        super().__init__(); n=64
        w=torch.zeros(n,n,dtype=torch.int8); w.fill_diagonal_(64); s.register_buffer('w',w)
        s.register_buffer('s',torch.full((n,n//32),1/64).to(bf))
    def forward(s,x):
        n=64; return F.gelu(F.linear(x,(s.w.view(n,2,32).to(bf)*s.s[:,:,None]).view(n,n)),approximate="tanh")
def mk3():
    x=torch.randn(16,64).mul(4).to(bf); x[0,:4]=torch.tensor([-5.0625,-5.09375,-5.125,-5.15625]).to(bf); return (x,)
bcheck("backend gw tanh edge", Edge(), mk3)
