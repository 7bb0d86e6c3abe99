import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
torch.manual_seed(0)
class Lin(torch.nn.Module):
    def __init__(s,N,K,G,dt=torch.bfloat16,raw=torch.int8,sdt=None,zero=False,bias=True):
        super().__init__(); s.N,s.K,s.G,s.dt=N,K,G,dt
        s.register_buffer('w', i8(N,K) if raw==torch.int8 else (torch.randn(N,K)*8).to(raw))
        s.register_buffer('s', sc(N,K//G,dtype=sdt or dt))
        s.register_buffer('z', (torch.randn(N,K//G)*4).to(dt) if zero else None)
        s.register_buffer('b', torch.randn(N).to(dt) if bias else None)
    def forward(s,x):
        N,K,G=s.N,s.K,s.G
        w=s.w.view(N,K//G,G).to(s.dt)
        if s.z is not None: w=w-s.z[:,:,None]
        w=(w*s.s[:,:,None]).view(N,K)
        return F.linear(x,w,s.b)
for G in [1,2,16,32,64,128]:
    for dt in [torch.bfloat16, torch.float16, torch.float32]:
        K=128; m=Lin(40,K,G,dt)
        check(f"G={G} {dt}", m, lambda: (torch.randn(5,K).to(dt),))
for raw in [torch.float8_e4m3fn, torch.float8_e5m2]:
    for dt in [torch.bfloat16, torch.float16, torch.float32]:
        m=Lin(40,128,32,dt,raw=raw); check(f"raw={raw} {dt}", m, lambda: (torch.randn(5,128).to(dt),))
# f32 scale beside bf16 weights -> f32 result; x f32
m=Lin(40,128,32,torch.bfloat16,sdt=torch.float32); check("f32 scale bf16 w, x f32", m, lambda:(torch.randn(5,128),))
m=Lin(40,128,32,torch.float16,sdt=torch.float32); check("f32 scale f16 w, x f32", m, lambda:(torch.randn(5,128),))
for dt in [torch.bfloat16, torch.float16, torch.float32]:
    m=Lin(40,128,32,dt,zero=True); check(f"zero {dt}", m, lambda:(torch.randn(5,128).to(dt),))
    m=Lin(40,128,32,dt,zero=True); check(f"zero {dt} decomposed", m, lambda:(torch.randn(5,128).to(dt),), decompose=True)
m=Lin(40,128,32); check("3D x", m, lambda:(torch.randn(2,3,128).to(torch.bfloat16),))
m=Lin(1,128,32); check("N=1", m, lambda:(torch.randn(1,128).to(torch.bfloat16),))
m=Lin(40,32,32); check("K=G=32", m, lambda:(torch.randn(3,32).to(torch.bfloat16),))
