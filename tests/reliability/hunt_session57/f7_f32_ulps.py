# F7 (known class, listed for completeness): f32 chains through exp / log1p / erf under the torch.compile backend
#     use ATen's exp / log1p / erf ops, eager's silu / softplus / logaddexp kernels (and Inductor) other
#     vectorized forms: ~1 f32 ulp off at 2-3 % of elements.
import sys; sys.path.insert(0, __import__("os").path.dirname(__file__)); from common import *
import torch.nn.functional as F
for name, fn in [("silu", lambda y, a, b: F.silu(y)), ("softplus", lambda y, a, b: F.softplus(y)),
                 ("logsigmoid", lambda y, a, b: F.logsigmoid(y)), ("logaddexp", lambda y, a, b: torch.logaddexp(y, a))]:
    check(name, fn, torch.float32, default_too=False)
