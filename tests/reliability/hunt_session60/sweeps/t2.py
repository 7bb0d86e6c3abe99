import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
from t1lib import Lin
torch.manual_seed(1)
m=Lin(40,128,32,torch.bfloat16,sdt=torch.float32,bias=False); check("f32 scale bf16 w, x f32", m, lambda:(torch.randn(5,128),))
m=Lin(40,128,32,torch.float16,sdt=torch.float32,bias=False); check("f32 scale f16 w, x f32", m, lambda:(torch.randn(5,128),))
m=Lin(40,128,32,torch.bfloat16,sdt=torch.float32,bias=False,zero=True); check("f32 scale bf16 w zero, x f32", m, lambda:(torch.randn(5,128),))
# bf16 scale, f32 weights? w.to(f32) * s bf16 -> f32
m=Lin(40,128,32,torch.float32,sdt=torch.bfloat16,bias=False); check("bf16 scale f32 w", m, lambda:(torch.randn(5,128),))
# uint8 zero point
class U8(torch.nn.Module):
    def __init__(s,N,K,G,dt=torch.bfloat16, zint=False):
        super().__init__(); s.N,s.K,s.G,s.dt=N,K,G,dt
        s.register_buffer('w', torch.randint(0,256,(N,K),dtype=torch.uint8))
        s.register_buffer('s', sc(N,K//G,dtype=dt))
        s.register_buffer('z', torch.randint(0,256,(N,K//G),dtype=torch.uint8) if zint else (torch.rand(N,K//G)*255).to(dt))
    def forward(s,x):
        N,K,G=s.N,s.K,s.G
        w=((s.w.view(N,K//G,G).to(s.dt)-s.z[:,:,None].to(s.dt))*s.s[:,:,None]).view(N,K)
        return torch.relu(F.linear(x,w))
check("u8 w float zero", U8(40,128,32), lambda:(torch.randn(5,128).to(torch.bfloat16),))
check("u8 w u8 zero", U8(40,128,32,zint=True), lambda:(torch.randn(5,128).to(torch.bfloat16),))
class U8b(U8):
    def forward(s,x):
        N,K,G=s.N,s.K,s.G
        w=((s.w.view(N,K//G,G).to(s.dt)-s.z.unsqueeze(-1))*s.s.unsqueeze(-1)).reshape(N,K)
        return torch.relu(F.linear(x,w))
check("u8 unsqueeze/reshape", U8b(40,128,32), lambda:(torch.randn(5,128).to(torch.bfloat16),))
# int subtraction before convert
class IntSub(torch.nn.Module):
    def __init__(s,N,K,G):
        super().__init__(); s.N,s.K,s.G=N,K,G
        s.register_buffer('w', torch.randint(0,16,(N,K),dtype=torch.int8)); s.register_buffer('z', torch.randint(0,16,(N,K//G,1),dtype=torch.int8)); s.register_buffer('s', sc(N,K//G,1))
    def forward(s,x):
        N,K,G=s.N,s.K,s.G
        return torch.relu(F.linear(x,((s.w.view(N,K//G,G)-s.z).to(torch.bfloat16)*s.s).view(N,K)))
check("int sub then convert, [N,K/G,1] params", IntSub(40,128,32), lambda:(torch.randn(5,128).to(torch.bfloat16),))
