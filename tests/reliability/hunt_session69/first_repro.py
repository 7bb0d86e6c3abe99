import torch, fxfuse, itertools
import torch.nn.functional as F
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(s, K, N): super().__init__(); s.l = torch.nn.Linear(K, N)
    def forward(s, x): return torch.relu(s.l(x))
class D(torch.nn.Module):
    def __init__(s, w, sc, b): super().__init__(); s.register_buffer('w', w); s.register_buffer('s', sc); s.register_buffer('b', b)
    def forward(s, x): return torch.relu(F.linear(x, s.w.to(torch.float32) * s.s, s.b))
for (S,B,K,N) in [(64,1,512,256),(64,2,1024,128),(8,3,4096,64),(128,1,64,1000),(5,8,2048,2048)]:
  for kind in ['lin_nograd','lin_grad','deq']:
    if kind=='deq':
        m = D(torch.randint(-127,127,(N,K),dtype=torch.int8), torch.rand(N,1)+0.5, torch.randn(N))
    else:
        m = M(K,N); m.requires_grad_(kind=='lin_grad')
    mk = lambda: torch.randn(B,S,K).transpose(0,1)
    ep = torch.export.export(m, (mk(),))
    rw = fxfuse.rewrite(ep).module()
    x = mk()
    with torch.no_grad():
        e = m(x); r = rw(x)
    print(kind,S,B,K,N,'diff frac %.4f' % (e != r).float().mean().item())
