import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
torch.manual_seed(3)
bf=torch.bfloat16; f8=torch.float8_e4m3fn
N,K=40,256
def mk_a(*lead,G=64): return lambda: ((torch.randn(*lead,K)*16).to(f8), sc(*lead,K//G))
class A2(torch.nn.Module):
    def __init__(s,G=64,GB=None):
        super().__init__(); s.G=G; s.GB=GB; s.register_buffer('w',i8(N,K)); s.register_buffer('s',sc(N,K//(GB or 1)))
        s.register_buffer('wf', torch.randn(N,K).to(bf))
    def forward(s,xq,sx):
        G=s.G; lead=xq.shape[:-1]
        x=(xq.view(*lead,K//G,G).to(bf)*sx[...,None]).view(*lead,K)
        if s.GB: w=(s.w.view(N,K//s.GB,s.GB).to(bf)*s.s[:,:,None]).view(N,K)
        else: w=s.wf
        return F.silu(F.linear(x,w))
check("A groups 2D", A2(), mk_a(8))
check("A groups 3D", A2(), mk_a(2,4))
check("A groups 3D decomp", A2(), mk_a(2,4), decompose=True)
check("A groups 4D", A2(), mk_a(2,3,4))
check("A+B same G", A2(64,64), mk_a(2,4))
check("A+B diff G (64,32)", A2(64,32), mk_a(2,4))
check("A+B diff G (32,64)", A2(32,64), mk_a(8,G=32))
check("A G=128 B G=128 4D", A2(128,128), mk_a(2,3,4,G=128))
# A scale shared across batch: sx [S, K/G] against x [B,S,K]
class A3(torch.nn.Module):
    def __init__(s,G=64): super().__init__(); s.G=G; s.register_buffer('wf',torch.randn(N,K).to(bf))
    def forward(s,xq,sx):
        B,S,_=xq.shape; G=s.G
        x=(xq.view(B,S,K//G,G).to(bf)*sx[None,:,:,None]).view(B,S,K)
        return F.silu(F.linear(x,s.wf))
check("A scale along part of M [S,K/G]", A3(), lambda: ((torch.randn(2,4,K)*16).to(f8), sc(4,K//64)))
class A4(torch.nn.Module):
    def __init__(s,G=64): super().__init__(); s.G=G; s.register_buffer('wf',torch.randn(N,K).to(bf))
    def forward(s,xq,sx):
        B,S,_=xq.shape; G=s.G
        x=(xq.view(B,S,K//G,G).to(bf)*sx[:,None,:,None]).view(B,S,K)
        return F.silu(F.linear(x,s.wf))
check("A scale [B,1,K/G,1]", A4(), lambda: ((torch.randn(2,4,K)*16).to(f8), sc(2,K//64)))
class A5(torch.nn.Module):
    def __init__(s,G=64): super().__init__(); s.G=G; s.register_buffer('wf',torch.randn(N,K).to(bf))
    def forward(s,xq,sx):
        G=s.G
        x=(xq.view(-1,K//G,G).to(bf)*sx[:,:,None]).view(xq.shape)
        return F.silu(F.linear(x,s.wf))
check("A flattened region view(-1,K/G,G) of 3D", A5(), lambda: ((torch.randn(2,4,K)*16).to(f8), sc(8,K//64)))
# dynamic batch
bd=torch.export.Dim("b",min=2,max=64)
check("A groups dynamic batch", A2(64,64), mk_a(5,4), dyn=({0:bd},{0:bd}))
class Lin3(torch.nn.Module):
    def __init__(s,G=32):
        super().__init__(); s.G=G; s.register_buffer('w',i8(N,K)); s.register_buffer('s',sc(N,K//G))
    def forward(s,x):
        G=s.G; return F.gelu(F.linear(x,(s.w.view(N,K//G,G).to(bf)*s.s[:,:,None]).view(N,K)))
check("B groups dynamic 3D batch", Lin3(), lambda:(torch.randn(3,7,K).to(bf),), dyn=({0:bd, 1:torch.export.Dim("s",min=2,max=64)},))
