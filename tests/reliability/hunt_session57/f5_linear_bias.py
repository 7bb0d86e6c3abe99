# F5: a 16-bit F.linear WITH bias followed by any epilogue (relu here): the chain computes the GEMM as an
#     f32 mm of upcast operands plus the bias, rounded once; eager's native 16-bit addmm accumulates differently,
#     so some elements are one ulp off eager (and off Inductor, which calls eager's addmm).  Both paths; no bias: exact.
import sys; sys.path.insert(0, __import__("os").path.dirname(__file__)); from common import *
import torch.nn.functional as F
bad = 0
for K in (32, 1024):
    for dt in (torch.float16, torch.bfloat16):
        for bias in (True, False):
            g = torch.Generator().manual_seed(0)
            x = torch.randn(256, K, generator=g).to(dt)
            w = (torch.randn(512, K, generator=g) / K ** 0.5).to(dt)
            b = torch.randn(512, generator=g).to(dt) if bias else None
            class L(torch.nn.Module):
                def forward(self, x, w): return torch.relu(F.linear(x, w, b))
            m = L(); eager = m(x, w)
            torch._dynamo.reset(); ind = torch.compile(m)(x, w)
            torch._dynamo.reset(); fxfuse.reset_stats(); fc = fxfuse.compile(m, only_profitable=False)(x, w)
            ep = torch.export.export(m, (x, w)); fe = fxfuse.rewrite(ep, only_profitable=False).module()(x, w)
            n_c, n_e, n_i = int(neq(fc, eager).sum()), int(neq(fe, eager).sum()), int(neq(ind, eager).sum())
            print(f"K={K:4d} {dt} bias={bias!s:5}: compile!=eager {n_c}/{eager.numel()}  export-rewrite!=eager {n_e}  inductor!=eager {n_i}")
            if n_e:
                i = tuple(neq(fe, eager).nonzero()[0].tolist())
                print(f"     e.g. fxfuse={fe[i].item()!r} eager={eager[i].item()!r} inductor={ind[i].item()!r} "
                      f"exact f32 (x@w.T+b)={(x.float() @ w.float().t() + b.float())[i].item()!r}")
            bad += n_c + n_e
sys.exit(1 if bad else 0)
