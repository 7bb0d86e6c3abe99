import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
exec(open("./run7.py").read().split("for f in")[0].split("torch.manual_seed(0)")[1])
torch.manual_seed(0)
for f in ["rsub", "add_big_i8", "neg", "sub_big", "mask_after_reshape"]:
    m = Sym(256, 64, 64, form2=f)
    ep = torch.export.export(m, (torch.randn(3, 256).half(),))
    print("==", f)
    print(str(fxfuse.report(ep)))
    ep2 = fxfuse.rewrite(ep)
    print("   left:", left(ep2))
