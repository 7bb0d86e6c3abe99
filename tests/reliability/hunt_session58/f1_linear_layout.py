"""fxfuse.rewrite on a non-decomposed export: F.linear(x, w, b) with a NON-contiguous 3-D 16-bit x, then GELU.
Eager's linear for such an input computes matmul (rounded to 16 bits) and then adds the bias (rounded again);
the fused chain rounds once. Result: ~25-30% of elements 1 ulp off eager (closer to float64 than eager)."""
import torch, torch.nn as nn, torch.nn.functional as F, fxfuse, warnings
warnings.filterwarnings("ignore")

class M(nn.Module):
    def __init__(s):
        super().__init__(); s.l = nn.Linear(64, 72)
    def forward(s, xt):
        return F.gelu(s.l(xt.transpose(1, 2)))

for dt in (torch.bfloat16, torch.float16):
    m = M().to(dt).eval()
    xt = torch.randn(2, 64, 16, dtype=dt)
    for decomp in (False, True):
        ep = torch.export.export(m, (xt,))
        if decomp: ep = ep.run_decompositions()
        rw = fxfuse.rewrite(ep, only_profitable=False)
        x2 = torch.randn(2, 64, 16, dtype=dt)
        with torch.no_grad():
            e = m(x2); f = rw.module()(x2)
            r = M().double(); r.load_state_dict({k: v.double() for k, v in m.state_dict().items()}); ref = r(x2.double())
        err = lambda a: float((a.double() - ref).norm() / ref.norm())
        print(f"{dt} decomp={decomp}: fused!=eager {int((e != f).sum())}/{e.numel()}  eager_err={err(e):.4g} fused_err={err(f):.4g}")
