# F2: addcdiv with the GEMM's output as tensor1 or tensor2 (torch.compile backend): the chain
#     div -> mul -> add rounds each step to bf16/f16; eager (and Inductor) round once.
import sys; sys.path.insert(0, __import__("os").path.dirname(__file__)); from common import *
bad = 0
for dt in (torch.bfloat16, torch.float16):
    bad += check("addcdiv(a, y, b, value=0.5)", lambda y, a, b: torch.addcdiv(a, y, b, value=0.5), dt)
    bad += check("addcdiv(a, b, y, value=0.5)", lambda y, a, b: torch.addcdiv(a, b, y, value=0.5), dt)
sys.exit(1 if bad else 0)
