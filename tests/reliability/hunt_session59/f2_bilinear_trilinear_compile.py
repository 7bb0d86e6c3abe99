# Finding 2: F.bilinear is reported (unsupported_gemm_op) in an exported program, but under the
# torch.compile backend (and after run_decompositions) the graph holds aten._trilinear, which the
# report does not list at all ("(no GEMM in this graph)").
# Run: cd /work/main && TORCHINDUCTOR_FX_GRAPH_CACHE=0 TORCHINDUCTOR_AUTOGRAD_CACHE=0 PYTHONPATH=python python3 tests/reliability/hunt_session59/f2_bilinear_trilinear_compile.py
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse, fxfuse.backend as fb
class M(torch.nn.Module):
    def __init__(s): super().__init__(); s.b = torch.nn.Bilinear(16, 16, 8)
    def forward(s, a, c): return s.b(a, c).relu()
m = M().eval(); a, c = torch.randn(4, 16), torch.randn(4, 16)
ep = torch.export.export(m, (a, c))
print("export graph ops:", [str(n.target) for n in ep.graph.nodes if n.op == "call_function"])
print(fxfuse.report(ep))
epd = ep.run_decompositions()
print("export+decomp graph ops:", [str(n.target) for n in epd.graph.nodes if n.op == "call_function"])
print(fxfuse.report(epd))
seen = []
orig = fb.run_on_graph
def spy(graph, *a, **k):
    seen.append([str(n.target) for n in graph.nodes if n.op == "call_function"]); return orig(graph, *a, **k)
fb.run_on_graph = spy
fxfuse.reset_stats()
with torch.no_grad(): torch.compile(m, backend="fxfuse")(a, c)
print("graph the pass saw under torch.compile:", seen)
print(fxfuse.report())
