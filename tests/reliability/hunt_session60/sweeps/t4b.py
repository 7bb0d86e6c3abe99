import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hb import *
torch.manual_seed(2)
bf=torch.bfloat16
N,K,G=40,128,32
def X(*s, dt=bf): return lambda: (torch.randn(*s).to(dt),)
class M(torch.nn.Module):
    def __init__(self_, f, **bufs):
        super().__init__(); self_.f=f
        for k_,v_ in bufs.items(): self_.register_buffer(k_,v_)
    def forward(self_,*a): return self_.f(self_,*a)
w=i8(N,K); s=sc(N,K//G); wt=i8(K,N); st=sc(K//G,N)
cases = {
 "matmul form": (lambda m,x: torch.relu(x @ (m.wt.view(K//G,G,N).to(bf)*m.st[:,None,:]).view(K,N)), dict(wt=wt,st=st)),
 "transposed scale s.t()": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.st.t()[:,:,None]).view(N,K))), dict(w=w,st=st)),
 "scale param [N,K/G,1]": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s3).view(N,K))), dict(w=w,s3=s[:,:,None].clone())),
 "weight stored [N,K/G,G]": (lambda m,x: torch.relu(F.linear(x,(m.w3.to(bf)*m.s[:,:,None]).view(N,K))), dict(w3=w.view(N,K//G,G).clone(),s=s)),
 "reshape spelling": (lambda m,x: torch.relu(F.linear(x,(m.w.reshape(N,K//G,G).to(bf)*m.s[:,:,None]).reshape(N,K))), dict(w=w,s=s)),
 "unflatten/flatten": (lambda m,x: torch.relu(F.linear(x,(m.w.unflatten(1,(K//G,G)).to(bf)*m.s.unsqueeze(2)).flatten(1))), dict(w=w,s=s)),
 "flatten(-2)": (lambda m,x: torch.relu(F.linear(x,(m.w.unflatten(-1,(-1,G)).to(bf)*m.s.unsqueeze(-1)).flatten(-2))), dict(w=w,s=s)),
 "expand scale": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None].expand(N,K//G,G)).view(N,K))), dict(w=w,s=s)),
 "expand+reshape scale [N,K]": (lambda m,x: torch.relu(F.linear(x,m.w.to(bf)*m.s[:,:,None].expand(N,K//G,G).reshape(N,K))), dict(w=w,s=s)),
 "repeat_interleave scale": (lambda m,x: torch.relu(F.linear(x,m.w.to(bf)*m.s.repeat_interleave(G,dim=1))), dict(w=w,s=s)),
 "convert after view merge": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G)*1).view(N,K).to(bf))), dict(w=w)),
 "convert after mul merged": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).float()*m.s[:,:,None].float()).view(N,K).to(bf))), dict(w=w,s=s)),
 "two scales (per-group, per-channel)": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]*m.c[:,None,None]).view(N,K))), dict(w=w,s=s,c=sc(N))),
 "per-channel after merge": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)*m.c[:,None])), dict(w=w,s=s,c=sc(N))),
 "scalar mul inside": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]*0.5).view(N,K))), dict(w=w,s=s)),
 "div by scale": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)/m.s[:,:,None]).view(N,K))), dict(w=w,s=s)),
 "scale [1,K/G,1] (per group only)": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s1[None,:,None]).view(N,K))), dict(w=w,s1=sc(K//G))),
 "scale [N,1,1]": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.c[:,None,None]).view(N,K))), dict(w=w,c=sc(N))),
 "scale [G] inner (k%G)": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.t).view(N,K))), dict(w=w,t=sc(G))),
 "swapped view(N,G,K/G) s[:,None,:]": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,G,K//G).to(bf)*m.s[:,None,:]).view(N,K))), dict(w=w,s=s)),
 "view(N,G,K/G) s[:,:,None]": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,G,K//G).to(bf)*m.sg[:,:,None]).view(N,K))), dict(w=w,sg=sc(N,G))),
 "sliced weight": (lambda m,x: torch.relu(F.linear(x,(m.wb[:N].view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K))), dict(wb=i8(2*N,K),s=s)),
 "sliced weight along k": (lambda m,x: torch.relu(F.linear(x,(m.wb[:, :K].reshape(N,K//G,G).to(bf)*m.s[:,:,None]).reshape(N,K))), dict(wb=i8(N,2*K),s=s)),
 "transposed weight .t() contiguous()": (lambda m,x: torch.relu(F.linear(x,(m.wt.t().reshape(N,K//G,G).to(bf)*m.s[:,:,None]).reshape(N,K))), dict(wt=wt,s=s)),
 "matmul with .t() of linear-layout": (lambda m,x: torch.relu(x @ (m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K).t()), dict(w=w,s=s)),
 "linear with .t() of matmul-layout": (lambda m,x: torch.relu(F.linear(x, (m.wt.view(K//G,G,N).to(bf)*m.st[:,None,:]).view(K,N).t())), dict(wt=wt,st=st)),
 "permute inside region": (lambda m,x: torch.relu(F.linear(x,(m.w3p.permute(1,0,2).to(bf)*m.s[:,:,None]).reshape(N,K))), dict(w3p=w.view(N,K//G,G).permute(1,0,2).contiguous(),s=s)),
 "permute after convert inside": (lambda m,x: torch.relu(F.linear(x,(m.wt.view(K//G,G,N).to(bf).permute(2,0,1)*m.s[:,:,None]).reshape(N,K))), dict(wt=wt,s=s)),
 "transposed inner group": (lambda m,x: torch.relu(F.linear(x,(m.wg.to(bf).transpose(1,2)*m.s[:,:,None]).reshape(N,K))), dict(wg=i8(N,G,K//G).transpose(1,2).contiguous().transpose(1,2).contiguous(),s=s)),
 "dequant weight also output": (lambda m,x: (lambda W: (torch.relu(F.linear(x,W)), W))((m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)), dict(w=w,s=s)),
 "dequant weight in epilogue": (lambda m,x: (lambda W: torch.relu(F.linear(x,W)) + W[:1,:N].sum())((m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,N*0+K)), dict(w=w,s=s)),
 "dequant weight used by two gemms": (lambda m,x: (lambda W: torch.relu(F.linear(x,W)) * torch.sigmoid(F.linear(x*2,W)))((m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)), dict(w=w,s=s)),
 "3D-group region view 2-level": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G//2,2).to(bf)*m.s[:,:,None,None]).view(N,K))), dict(w=w,s=s)),
 "nested views": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N*K//G,G).view(N,K))), dict(w=w,s=s)),
 "view over N too": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N//2,2,K//G,G).to(bf)*m.s.view(N//2,2,K//G)[:,:,:,None]).view(N,K))), dict(w=w,s=s)),
 "flat weight [N*K]": (lambda m,x: torch.relu(F.linear(x,(m.wf.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K))), dict(wf=i8(N*K),s=s)),
 "scale view(N*K/G) flat": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.sf.view(N,K//G,1)).view(N,K))), dict(w=w,sf=sc(N*K//G))),
}
for name,(f,b) in cases.items():
    bcheck(name, M(f,**b), X(6,K), tries=2)
    bcheck(name+" 3D", M(f,**b), X(2,3,K), tries=2)
