# Finding 7: fxfuse.report() of a program rewritten before counts "fused before" chains only in the top
# graph: with chains fused inside torch.cond branches the report says "chains_fused=0" and lists one
# unfused GEMM, never mentioning the two fused ops in the branches (top-graph-only programs get
# "N chain(s) fused before: the graph holds fxfuse.gemm_chain ops").
# Run: cd /work/main && PYTHONPATH=python python3 tests/reliability/hunt_session59/f7_report_of_rewritten_cond_program.py
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse, torch.nn.functional as F
class CondModel(torch.nn.Module):
    def __init__(s): super().__init__(); s.a = torch.nn.Linear(32, 32); s.b = torch.nn.Linear(32, 32); s.c = torch.nn.Linear(32, 32)
    def forward(s, x):
        y = s.c(x)
        return torch.cond(x.sum() > 0, lambda t: F.relu(s.a(t)), lambda t: torch.sigmoid(s.b(t)), (y,))
ep2 = fxfuse.rewrite(torch.export.export(CondModel().eval(), (torch.randn(8, 32),)))
ops = sum(n.target == torch.ops.fxfuse.gemm_chain.default
          for gm in ep2.graph_module.modules() if isinstance(gm, torch.fx.GraphModule) for n in gm.graph.nodes)
print("gemm_chain ops in the rewritten program (branches included):", ops)
print(fxfuse.report(ep2))
