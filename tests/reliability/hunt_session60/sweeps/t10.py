import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hb import *
torch.manual_seed(6)
class P(torch.nn.Module):
    def __init__(s): super().__init__(); s.l=torch.nn.Linear(128,48)
    def forward(s,x): return F.silu(s.l(x))
bcheck("plain linear silu f32", P(), lambda:(torch.randn(6,128),), compare_inductor=True)
def sil(x): return F.silu(x*1.0001)
bcheck("no gemm silu f32", sil, lambda:(torch.randn(6,128),), compare_inductor=True)
