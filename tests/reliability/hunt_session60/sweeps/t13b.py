import os
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"]="0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"]="0"
import torch, fxfuse, torch.nn.functional as F, copy
torch.manual_seed(8)
def bits(a,b): return a.dtype==b.dtype and torch.equal(a,b)
def i8(*s): return torch.randint(-128,128,s,dtype=torch.int8)
N,K,G=48,128,32
class GW(torch.nn.Module):
    def __init__(s,dt):
        super().__init__(); s.register_buffer('w',i8(N,K)); s.s=torch.nn.Parameter((torch.rand(N,K//G)*0.02+0.001).to(dt)); s.b=torch.nn.Parameter(torch.randn(N).to(dt)); s.l2=torch.nn.Linear(N,16).to(dt)
    def forward(s,x): return s.l2(F.gelu(F.linear(x,(s.w.view(N,K//G,G).to(x.dtype)*s.s[:,:,None]).view(N,K),s.b),approximate="tanh"))
class Mlp(torch.nn.Module):
    def __init__(s,dt,ap): super().__init__(); s.a=torch.nn.Linear(K,N).to(dt); s.b=torch.nn.Linear(N,16).to(dt); s.ap=ap
    def forward(s,x): return s.b(F.gelu(s.a(x),approximate=s.ap))
for dt in [torch.bfloat16, torch.float16, torch.float32]:
    for name,mk in [("gw",lambda: GW(dt)),("mlp tanh",lambda: Mlp(dt,"tanh")),("mlp none",lambda: Mlp(dt,"none"))]:
        m=mk(); m2=copy.deepcopy(m)
        torch._dynamo.reset(); fxfuse.reset_stats()
        cm=torch.compile(m2, backend=fxfuse.backend_with(only_profitable=False))
        m3=copy.deepcopy(m); torch._dynamo.reset(); cm3=None
        try:
            res=[]
            for it in range(2):
                x=torch.randn(8,K).to(dt); x1=x.clone().requires_grad_(); x2=x.clone().requires_grad_()
                torch._dynamo.reset(); cm3=torch.compile(m)  # plain inductor as the reference
                y1=cm3(x1); torch._dynamo.reset(); fxfuse.reset_stats(); cm=torch.compile(m2, backend=fxfuse.backend_with(only_profitable=False)); y2=cm(x2)
                g=torch.randn_like(y1)
                y1.backward(g); y2.backward(g)
                res.append(bits(y1.detach(),y2.detach()))
                res.append(bits(x1.grad,x2.grad))
                for (n1,p1),(n2,p2) in zip(m.named_parameters(),m2.named_parameters()):
                    res.append(bits(p1.grad,p2.grad))
                    p1.grad=None; p2.grad=None
            print(dt,name,"fused",fxfuse.stats()["chains_fused"],"all bits equal" if all(res) else f"MISMATCH {res}")
        except Exception as e: print(dt,name,"EXC",type(e).__name__,str(e)[:400])
