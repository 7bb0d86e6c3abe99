import os, sys
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0"); os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, fxfuse
def nfused(ep):
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and "fxfuse" in str(n.target))
def cmp(name, got, want):
    if want.dtype in (torch.bfloat16, torch.float16):
        d = int((got != want).sum()); print(f"{name}: {d} of {want.numel()} differ; maxabs {(got.float()-want.float()).abs().max().item():.4g}")
    else:
        print(f"{name}: rel {((got.double()-want.double()).norm()/want.double().norm()).item():.3g}")
def export_fused(m, args, decomp=False):
    ep = torch.export.export(m, args)
    if decomp: ep = ep.run_decompositions()
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    return ep2, nfused(ep2)
