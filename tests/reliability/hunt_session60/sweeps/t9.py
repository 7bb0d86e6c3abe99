import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hb import *
torch.manual_seed(5)
bf=torch.bfloat16
N,K,G=48,128,32
class Lin(torch.nn.Module):
    def __init__(s,dt=bf,zero=False,act="gelu_tanh",raw=torch.int8):
        super().__init__(); s.dt=dt; s.act=act
        s.register_buffer('w', i8(N,K) if raw==torch.int8 else (torch.randn(N,K)*8).to(raw)); s.register_buffer('s',sc(N,K//G,dtype=dt))
        s.register_buffer('z',(torch.randn(N,K//G)*4).to(dt) if zero else None); s.register_buffer('b',torch.randn(N).to(dt))
    def forward(s,x):
        w=s.w.view(N,K//G,G).to(s.dt)
        if s.z is not None: w=w-s.z[:,:,None]
        y=F.linear(x,(w*s.s[:,:,None]).view(N,K),s.b)
        return {"gelu_tanh":lambda v:F.gelu(v,approximate="tanh"),"gelu":F.gelu,"relu":torch.relu,"silu":F.silu}[s.act](y)
for dt in [bf, torch.float16, torch.float32]:
    for act in ["gelu_tanh","gelu","relu","silu"]:
        bcheck(f"backend lin {dt} {act}", Lin(dt,act=act), lambda:(torch.randn(6,K).to(dt)*3,))
    bcheck(f"backend lin zero {dt}", Lin(dt,zero=True), lambda:(torch.randn(6,K).to(dt),))
    bcheck(f"backend lin fp8 {dt}", Lin(dt,raw=torch.float8_e4m3fn), lambda:(torch.randn(6,K).to(dt),))
    bcheck(f"backend lin 3D {dt}", Lin(dt), lambda:(torch.randn(2,5,K).to(dt),))
bcheck("backend lin dynamic", Lin(bf), lambda:(torch.randn(torch.randint(2,30,()).item(),K).to(bf),), tries=4, dynamic=True)
class Mat(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(K,N)); s.register_buffer('s',sc(K//G,N))
    def forward(s,x): return torch.relu(x @ (s.w.view(K//G,G,N).to(bf)*s.s[:,None,:]).view(K,N))
bcheck("backend matmul", Mat(), lambda:(torch.randn(6,K).to(bf),))
bcheck("backend matmul 3D", Mat(), lambda:(torch.randn(2,3,K).to(bf),))
class AG(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(N,K)); s.register_buffer('s',sc(N,K//64))
    def forward(s,xq,sx):
        lead=xq.shape[:-1]
        x=(xq.view(*lead,K//64,64).to(bf)*sx[...,None]).view(*lead,K)
        return F.silu(F.linear(x,(s.w.view(N,K//64,64).to(bf)*s.s[:,:,None]).view(N,K)))
bcheck("backend A+B groups", AG(), lambda:((torch.randn(6,K)*8).to(torch.float8_e4m3fn),sc(6,K//64)))
bcheck("backend A+B groups 3D", AG(), lambda:((torch.randn(2,3,K)*8).to(torch.float8_e4m3fn),sc(2,3,K//64)))
# training: x requires grad, weight dequant from buffers
class LinTrain(torch.nn.Module):
    def __init__(s): super().__init__(); s.register_buffer('w',i8(N,K)); s.s=torch.nn.Parameter(sc(N,K//G)); s.b=torch.nn.Parameter(torch.randn(N).to(bf))
    def forward(s,x): return F.gelu(F.linear(x,(s.w.view(N,K//G,G).to(bf)*s.s[:,:,None]).view(N,K),s.b),approximate="tanh")
bcheck("backend training scale param", LinTrain(), lambda:(torch.randn(6,K).to(bf).requires_grad_(),), grad=True)
