# Finding 4: fxfuse.report(ep, enabled=False) reports every chain "fused", while
# fxfuse.rewrite(ep, enabled=False) (same options) rewrites nothing: report fused count != gemm_chain ops.
# Run: cd /work/main && PYTHONPATH=python python3 tests/reliability/hunt_session59/f4_report_enabled_false.py
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse, torch.nn.functional as F
class M(torch.nn.Module):
    def __init__(s): super().__init__(); s.l1 = torch.nn.Linear(32, 64); s.l2 = torch.nn.Linear(64, 32)
    def forward(s, x): return x + s.l2(F.gelu(s.l1(x), approximate="tanh"))
ep = torch.export.export(M().eval(), (torch.randn(4, 8, 32),))
print(fxfuse.report(ep, enabled=False))
ep2 = fxfuse.rewrite(ep, enabled=False)
print("gemm_chain ops in rewrite(ep, enabled=False):",
      sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep2.graph.nodes))
