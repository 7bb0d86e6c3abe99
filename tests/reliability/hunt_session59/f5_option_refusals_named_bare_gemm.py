# Finding 5: when an Options switch (extra_outputs=False, epilogue=False, prologue=False) is what keeps a
# GEMM's chain from fusing, the report says "no_epilogue_no_prologue (a bare GEMM: cuBLAS is as good)"
# although the GEMM has an epilogue/prologue; the option is named nowhere in the report (the pass's own
# note "... the region ends there (extra_outputs is off)" is dropped). Flipping the option back fuses it.
# Run: cd /work/main && PYTHONPATH=python python3 tests/reliability/hunt_session59/f5_option_refusals_named_bare_gemm.py
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse, torch.nn.functional as F
class Returned(torch.nn.Module):          # y = linear(x) is returned and feeds relu(y) + 1
    def __init__(s): super().__init__(); s.l = torch.nn.Linear(32, 32)
    def forward(s, x): y = s.l(x); return F.relu(y) + 1, y
class Quant(torch.nn.Module):             # relu(x @ (w_int8.to(f32) * scale))
    def __init__(s):
        super().__init__()
        s.register_buffer("w", torch.randint(-127, 127, (32, 64), dtype=torch.int8)); s.register_buffer("sc", torch.rand(64))
    def forward(s, x): return F.relu(x @ (s.w.to(x.dtype) * s.sc))
def show(title, m, x, **opts):
    ep = torch.export.export(m.eval(), (x,))
    for e in fxfuse.report(ep, **opts).entries:
        print(f"{title:38s} {opts}: {e['gemm']}: {e['status']}: {e.get('chain') or (e['reason'] + ' (' + e['detail'] + ')')}")
        print(f"{'':38s} notes: {e.get('notes')}")
show("linear whose output is also returned", Returned(), torch.randn(2, 8, 32))
show("linear whose output is also returned", Returned(), torch.randn(2, 8, 32), extra_outputs=False)
show("int8-weight matmul + relu", Quant(), torch.randn(8, 32))
show("int8-weight matmul + relu", Quant(), torch.randn(8, 32), epilogue=False, prologue=False)
