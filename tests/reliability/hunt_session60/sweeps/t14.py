import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
bf=torch.bfloat16
N,K,G=40,128,32
class M(torch.nn.Module):
    def __init__(self_, f, **bufs):
        super().__init__(); self_.f=f
        for k_,v_ in bufs.items(): self_.register_buffer(k_,v_)
    def forward(self_,*a): return self_.f(self_,*a)
w=i8(N,K); s=sc(N,K//G)
cases={
 "weight stored [N,K/G,G]": (lambda m,x: torch.relu(F.linear(x,(m.w3.to(bf)*m.s[:,:,None]).view(N,K))), dict(w3=w.view(N,K//G,G).clone(),s=s)),
 "unflatten/flatten": (lambda m,x: torch.relu(F.linear(x,(m.w.unflatten(1,(K//G,G)).to(bf)*m.s.unsqueeze(2)).flatten(1))), dict(w=w,s=s)),
 "repeat_interleave scale": (lambda m,x: torch.relu(F.linear(x,m.w.to(bf)*m.s.repeat_interleave(G,dim=1))), dict(w=w,s=s)),
 "permute inside region": (lambda m,x: torch.relu(F.linear(x,(m.w3p.permute(1,0,2).to(bf)*m.s[:,:,None]).reshape(N,K))), dict(w3p=w.view(N,K//G,G).permute(1,0,2).contiguous(),s=s)),
 "2-level": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G//2,2).to(bf)*m.s[:,:,None,None]).view(N,K))), dict(w=w,s=s)),
 "nested views": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N*K//G,G).view(N,K))), dict(w=w,s=s)),
 "swapped view(N,G,K/G) s[:,None,:]": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,G,K//G).to(bf)*m.s[:,None,:]).view(N,K))), dict(w=w,s=s)),
 "view over N too": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N//2,2,K//G,G).to(bf)*m.s.view(N//2,2,K//G)[:,:,:,None]).view(N,K))), dict(w=w,s=s)),
 "flat weight [N*K]": (lambda m,x: torch.relu(F.linear(x,(m.wf.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K))), dict(wf=i8(N*K),s=s)),
 "f64 scale": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.sd[:,:,None]).view(N,K).to(bf))), dict(w=w,sd=s.double())),
}
for name,(f,b) in cases.items():
    ep=torch.export.export(M(f,**b),(torch.randn(6,K).to(bf),))
    print("==",name); print(str(fxfuse.report(ep,only_profitable=False)).splitlines()[1])
