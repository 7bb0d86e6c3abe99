# F3: F.softshrink(y, 0.3) (torch.compile backend): the decomposition y - sign(y) * 0.3 is typed bf16/f16,
#     so the chain rounds sign(y) * 0.3 to 0.30078125 (bf16) before the subtraction; eager subtracts 0.3f.
import sys; sys.path.insert(0, __import__("os").path.dirname(__file__)); from common import *
import torch.nn.functional as F
bad = 0
for dt in (torch.bfloat16, torch.float16):
    bad += check("softshrink(y, 0.3)", lambda y, a, b: F.softshrink(y, 0.3), dt)
    bad += check("softshrink(y, 0.5)", lambda y, a, b: F.softshrink(y, 0.5), dt)  # 0.5 is exact: expect 0
sys.exit(1 if bad else 0)
