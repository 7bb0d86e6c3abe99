# F1: torch.lerp after a GEMM under the torch.compile backend: Inductor's decomposition
#     (sub; add(alpha=w) / addcmul) is cut after the sub, whose bf16/f16 result is materialized.
import sys; sys.path.insert(0, __import__("os").path.dirname(__file__)); from common import *
bad = 0
for dt in (torch.bfloat16, torch.float16):
    bad += check("lerp(y, a, 0.3)", lambda y, a, b: torch.lerp(y, a, 0.3), dt)
    bad += check("lerp(a, y, 0.7)", lambda y, a, b: torch.lerp(a, y, 0.7), dt)
    bad += check("lerp(y, a, sigmoid(b))", lambda y, a, b: torch.lerp(y, a, b.sigmoid()), dt)
sys.exit(1 if bad else 0)
