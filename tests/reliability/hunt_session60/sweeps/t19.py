import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hb import *
import warnings
bf=torch.bfloat16; f8=torch.float8_e4m3fn
N,K,G=40,256,64
class A3(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('wf',torch.randn(N,K).to(bf))
    def forward(s,xq,sx):
        B,S,_=xq.shape
        x=(xq.view(B,S,K//G,G).to(bf)*sx[None,:,:,None]).view(B,S,K)
        return F.silu(F.linear(x,s.wf))
ep=torch.export.export(A3(),((torch.randn(2,4,K)*16).to(f8), sc(4,K//G)))
print(fxfuse.report(ep,only_profitable=False))
class PC(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(N,K)); s.register_buffer('c',sc(N))
    def forward(s,x): return torch.relu(F.linear(x,(s.w.view(N,K//G,G).to(bf)*s.c[:,None,None]).view(N,K)))
with warnings.catch_warnings(record=True) as wl:
    warnings.simplefilter("always")
    bcheck("backend per-channel in region", PC(), lambda:(torch.randn(6,K).to(bf),), verbose=True)
    for w_ in wl:
        if "fxfuse" in str(w_.message): print("WARN:", str(w_.message)[:300])
