from h import *
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
