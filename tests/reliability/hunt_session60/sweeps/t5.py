import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
torch.manual_seed(2)
bf=torch.bfloat16
N,K,G=40,128,32
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.register_buffer('w',i8(N,K)); s.register_buffer('c',sc(N)); s.register_buffer('s',sc(N,K//G))
    def forward(s,x): return torch.relu(F.linear(x,(s.w.view(N,K//G,G).to(bf)*s.c[:,None,None]).view(N,K)))
ep=torch.export.export(M(),(torch.randn(6,K).to(bf),)); print(ep.graph); print(fxfuse.report(ep,only_profitable=False))
class M2(M):
    def forward(s,x): return torch.relu(F.linear(x,(s.w.unflatten(1,(K//G,G)).to(bf)*s.s.unsqueeze(2)).flatten(1)))
ep=torch.export.export(M2(),(torch.randn(6,K).to(bf),)); print(ep.graph); print(fxfuse.report(ep,only_profitable=False))
