import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
from t2 import U8, IntSub
for m in [U8(40,128,32), IntSub(40,128,32)]:
    ep=torch.export.export(m,(torch.randn(5,128).to(torch.bfloat16),)); print(fxfuse.report(ep,only_profitable=False))
