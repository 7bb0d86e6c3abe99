# F4: F.gelu (erf) after a GEMM under the torch.compile backend on the CPU: the chain evaluates Inductor's
#     decomposition x*0.5*(1+erf(x/sqrt2)) with ATen's erf *op*, while eager's gelu kernel (and Inductor's
#     generated code) use Vectorized<float>::erf: 16-bit results one ulp off.  The offline path keeps gelu whole.
import sys; sys.path.insert(0, __import__("os").path.dirname(__file__)); from common import *
import torch.nn.functional as F
bad = 0
for dt in (torch.bfloat16, torch.float16):
    bad += check("gelu(y)", lambda y, a, b: F.gelu(y), dt)
    # typical pre-activations: Linear(1024 -> 4096) on N(0,1) inputs, 1M values
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 1024, generator=g).to(dt); w = (torch.randn(4096, 1024, generator=g) / 32).to(dt)
    class L(torch.nn.Module):
        def forward(self, x, w): return F.gelu(x @ w.t())
    m = L(); eager = m(x, w)
    torch._dynamo.reset(); ind = torch.compile(m)(x, w)
    torch._dynamo.reset(); fxfuse.reset_stats(); fx = torch.compile(m, backend="fxfuse")(x, w)
    d, di = neq(fx, eager), neq(ind, eager)
    print(f"  [256x1024 @ 1024x4096, default backend] fxfuse!=eager {int(d.sum())}/{d.numel()}, inductor!=eager {int(di.sum())}, "
          f"chains_fused={fxfuse.stats()['chains_fused']}")
    bad += int((d & ~di).sum())
sys.exit(1 if bad else 0)
