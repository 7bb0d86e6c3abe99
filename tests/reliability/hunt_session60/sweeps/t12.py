import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hb import *
torch.manual_seed(7)
n=64
def mk(dt,*lead): return lambda: (torch.randn(*lead,n).mul(4).to(dt),)
for dt in [torch.bfloat16, torch.float16, torch.float32]:
  for ap in ["tanh","none"]:
    g=lambda v: F.gelu(v,approximate=ap)
    class TwoG(torch.nn.Module):
        def __init__(s): super().__init__(); s.a=torch.nn.Linear(n,n).to(dt); s.b=torch.nn.Linear(n,n).to(dt)
        def forward(s,x): return s.b(g(s.a(x))), g(s.b(x))
    class GofG(TwoG):
        def forward(s,x): return g(g(s.a(x)))
    class GofGout(TwoG):
        def forward(s,x): y=g(s.a(x)); return g(y), y
    class GofGplus(TwoG):
        def forward(s,x): y=g(s.a(x)); return g(y)+y
    class GonIn(TwoG):
        def forward(s,x): return g(x)+s.a(x)
    class GonIn2(TwoG):
        def forward(s,x): return s.a(g(x))
    class GtwoUse(TwoG):
        def forward(s,x): y=s.a(x); return g(y), g(y)*2, y
    class GmixedAp(TwoG):
        def forward(s,x): y=s.a(x); return F.gelu(y,approximate="tanh")+F.gelu(y)
    class GthenLin(TwoG):
        def forward(s,x): return s.b(g(s.a(x)))
    class Gres(TwoG):
        def forward(s,x): return g(s.a(x))+x
    class Gcast(TwoG):
        def forward(s,x): return g(s.a(x).float()).to(dt)
    for C in [TwoG,GofG,GofGout,GofGplus,GonIn,GonIn2,GtwoUse,GmixedAp,GthenLin,Gres,Gcast]:
        bcheck(f"{dt} {ap} {C.__name__}", C(), mk(dt,16), compare_inductor=True)
