# Finding 6: the report's chain description does not match the fused op's spec for addmm/baddbmm scalars:
#  - baddbmm(m, a, b, beta=0) is described "baddbmm+bias -> relu", but the spec has no bias (correctly dropped);
#  - addmm(b, x, w, beta=0.5, alpha=2) is described "addmm+bias -> relu", but the spec computes two extra muls
#    (the product scaled after the GEMM, which README names as a source of last-bit differences).
# Run: cd /work/main && PYTHONPATH=python python3 tests/reliability/hunt_session59/f6_chain_description_vs_spec.py
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse
class Baddbmm0(torch.nn.Module):
    def forward(s, m, a, b): return torch.baddbmm(m, a, b, beta=0.0).relu()
class AddmmAB(torch.nn.Module):
    def __init__(s): super().__init__(); s.w = torch.nn.Parameter(torch.randn(32, 32)); s.b = torch.nn.Parameter(torch.randn(32))
    def forward(s, x): return torch.relu(torch.addmm(s.b, x, s.w, beta=0.5, alpha=2.0))
for m, args in [(Baddbmm0(), (torch.randn(2, 8, 8), torch.randn(2, 8, 4), torch.randn(2, 4, 8))), (AddmmAB(), (torch.randn(8, 32),))]:
    ep = torch.export.export(m, args)
    print(str(fxfuse.report(ep)).rstrip())
    ep2 = fxfuse.rewrite(ep)
    for n in ep2.graph.nodes:
        if n.target == torch.ops.fxfuse.gemm_chain.default: print("spec in the rewritten graph:\n" + n.args[1])
