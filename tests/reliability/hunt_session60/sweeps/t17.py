import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
torch.manual_seed(10)
bf=torch.bfloat16; f16=torch.float16; f32=torch.float32
N,K,G=40,128,32
class M(torch.nn.Module):
    def __init__(self_, f, **bufs):
        super().__init__(); self_.f=f
        for k_,v_ in bufs.items(): self_.register_buffer(k_,v_)
    def forward(self_,*a): return self_.f(self_,*a)
w=i8(N,K)
cases={
 "i8 * f32 scale (implicit promotion)": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G)*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G,dtype=f32)), f32),
 "i8 * bf16 scale (implicit promotion)": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G)*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G)), bf),
 "f16 w * bf16 s -> f32": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(f16)*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G)), f32),
 "bf16 w * f16 s -> f32, back to bf16": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K).to(bf))), dict(w=w,s=sc(N,K//G,dtype=f16)), bf),
 "0-d f32 per-tensor * group bf16": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]*m.t).view(N,K))), dict(w=w,s=sc(N,K//G),t=torch.tensor(0.37)), bf),
 "0-d bf16 per-tensor inside region": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.t*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G),t=torch.tensor(0.37).to(bf)), bf),
 "python scalar zero point": (lambda m,x: torch.relu(F.linear(x,((m.w.view(N,K//G,G).to(bf)-8)*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G)), bf),
 "zero point int8 tensor promo": (lambda m,x: torch.relu(F.linear(x,((m.w.view(N,K//G,G).to(bf)-m.z[:,:,None])*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G),z=torch.randint(-8,8,(N,K//G),dtype=torch.int8)), bf),
 "zero point int32 tensor": (lambda m,x: torch.relu(F.linear(x,((m.w.view(N,K//G,G).to(bf)-m.z[:,:,None])*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G),z=torch.randint(-8,8,(N,K//G),dtype=torch.int32)), bf),
 "scale*(w-z) order": (lambda m,x: torch.relu(F.linear(x,(m.s[:,:,None]*(m.w.view(N,K//G,G).to(bf)-m.z[:,:,None])).view(N,K))), dict(w=w,s=sc(N,K//G),z=(torch.randn(N,K//G)*4).to(bf)), bf),
 "w*s - z*s (AWQ scaled zeros)": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]-m.z[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G),z=(torch.randn(N,K//G)*0.04).to(bf)), bf),
 "sub with alpha": (lambda m,x: torch.relu(F.linear(x,(torch.sub(m.w.view(N,K//G,G).to(bf),m.z[:,:,None],alpha=2)*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G),z=(torch.randn(N,K//G)*4).to(bf)), bf),
 "add zero": (lambda m,x: torch.relu(F.linear(x,((m.w.view(N,K//G,G).to(bf)+m.z[:,:,None])*m.s[:,:,None]).view(N,K))), dict(w=w,s=sc(N,K//G),z=(torch.randn(N,K//G)*4).to(bf)), bf),
 "fp8 scale?": (lambda m,x: torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None].to(bf)).view(N,K))), dict(w=w,s=(torch.rand(N,K//G)).to(torch.float8_e4m3fn)), bf),
 "x f16 grouped with f32 scale A": (lambda m,xq,sx: torch.relu(F.linear((xq.view(6,K//G,G).to(f16)*sx[:,:,None]).view(6,K).to(f16),m.wf)), dict(wf=torch.randn(N,K).to(f16)), None),
}
for name,(f,b,dt) in cases.items():
    if dt is None:
        check(name, M(f,**b), lambda:((torch.randn(6,K)*8).to(torch.float8_e4m3fn),sc(6,K//G,dtype=f32)))
    else:
        check(name, M(f,**b), lambda:(torch.randn(6,K).to(dt),))
        check(name+" decomp", M(f,**b), lambda:(torch.randn(6,K).to(dt),), decompose=True)
