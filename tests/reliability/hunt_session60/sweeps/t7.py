import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
torch.manual_seed(4)
bf=torch.bfloat16
B,M,N,K,G=3,8,24,128,32
class Bmm(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(B,K,N)); s.register_buffer('s',sc(B,K//G,N))
    def forward(s,x): return torch.relu(torch.bmm(x,(s.w.view(B,K//G,G,N).to(bf)*s.s[:,:,None,:]).view(B,K,N)))
check("bmm B [B,K,N] groups", Bmm(), lambda:(torch.randn(B,M,K).to(bf),))
check("bmm B [B,K,N] groups decomp", Bmm(), lambda:(torch.randn(B,M,K).to(bf),),decompose=True)
class Bmm2(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(B,N,K)); s.register_buffer('s',sc(B,N,K//G))
    def forward(s,x): return torch.relu(torch.bmm(x,(s.w.view(B,N,K//G,G).to(bf)*s.s[...,None]).view(B,N,K).transpose(1,2)))
check("bmm B [B,N,K]^T groups", Bmm2(), lambda:(torch.randn(B,M,K).to(bf),))
class Bmm3(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(B,K,N)); s.register_buffer('s',sc(K//G,N))
    def forward(s,x): return torch.relu(torch.bmm(x,(s.w.view(B,K//G,G,N).to(bf)*s.s[None,:,None,:]).view(B,K,N)))
check("bmm scale broadcast over b", Bmm3(), lambda:(torch.randn(B,M,K).to(bf),))
class Bmm4(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('wf',torch.randn(B,K,N).to(bf))
    def forward(s,xq,sx): return torch.relu(torch.bmm((xq.view(B,M,K//G,G).to(bf)*sx[...,None]).view(B,M,K),s.wf))
check("bmm A groups", Bmm4(), lambda:((torch.randn(B,M,K)*8).to(torch.float8_e4m3fn),sc(B,M,K//G)))
class MatB(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(B,K,N)); s.register_buffer('s',sc(B,K//G,N))
    def forward(s,x): return torch.relu(x @ (s.w.view(B,K//G,G,N).to(bf)*s.s[:,:,None,:]).view(B,K,N))
check("matmul 3D@3D groups", MatB(), lambda:(torch.randn(B,M,K).to(bf),))
class Ein(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(N,K)); s.register_buffer('s',sc(N,K//G))
    def forward(s,x): return torch.relu(torch.einsum('bmk,nk->bmn',x,(s.w.view(N,K//G,G).to(bf)*s.s[:,:,None]).view(N,K)))
check("einsum", Ein(), lambda:(torch.randn(B,M,K).to(bf),))
class Addmm(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(K,N)); s.register_buffer('s',sc(K//G,N)); s.register_buffer('b',torch.randn(N).to(bf))
    def forward(s,x): return torch.relu(torch.addmm(s.b,x,(s.w.view(K//G,G,N).to(bf)*s.s[:,None,:]).view(K,N)))
check("addmm", Addmm(), lambda:(torch.randn(M,K).to(bf),))
check("addmm decomp", Addmm(), lambda:(torch.randn(M,K).to(bf),),decompose=True)
