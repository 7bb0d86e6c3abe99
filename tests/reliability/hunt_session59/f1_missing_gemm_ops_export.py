# Finding 1: GEMM ops that torch.export keeps un-decomposed are missing from fxfuse's report
# ("(no GEMM in this graph)"), though the same GEMM fuses after run_decompositions().
# Run: cd /work/main && PYTHONPATH=python python3 tests/reliability/hunt_session59/f1_missing_gemm_ops_export.py
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse
W = torch.randn(32, 32)
cases = {
    "linalg.matmul + relu": lambda x: torch.relu(torch.linalg.matmul(x, W)),
    "linalg.multi_dot":     lambda x: torch.linalg.multi_dot([x, W, W]),
    "chain_matmul":         lambda x: torch.chain_matmul(x, W, W),
    "inner (2-D: x @ W.T)": lambda x: torch.inner(x, W),
    "F.bilinear":           None,
}
class M(torch.nn.Module):
    def __init__(s, f): super().__init__(); s.f = f
    def forward(s, x): return s.f(x)
for name, f in cases.items():
    if f is None: continue
    ep = torch.export.export(M(f), (torch.randn(8, 32),))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    print(f"== {name}: graph ops {targets}")
    print(str(fxfuse.report(ep)).rstrip())
    epd = ep.run_decompositions()
    print("   after run_decompositions():", [(e["gemm"], e["status"], e.get("chain") or e.get("reason")) for e in fxfuse.report(epd).entries])
