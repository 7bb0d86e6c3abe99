import torch, torch.nn.functional as F, contextlib, traceback
import fxfuse
torch.manual_seed(0)

def mode_ctx(mode):
    return {"no_grad": torch.no_grad, "enable_grad": torch.enable_grad, "inference": torch.inference_mode}[mode]()

def nfused(ep):
    return sum(1 for n in ep.graph.nodes if n.op == "call_function" and str(n.target) == "fxfuse.gemm_chain.default")

def check(name, m, make_x, modes=("no_grad",), ntries=2, export_mode="no_grad", quiet=False):
    """make_x(): fresh input(s) tuple with the example layout."""
    res = []
    try:
        ex = make_x()
        with mode_ctx(export_mode) if export_mode != "inference" else torch.no_grad():
            ep = fxfuse.rewrite(torch.export.export(m, ex), only_profitable=False)
        nf = nfused(ep)
        fm = ep.module()
    except Exception as e:
        print(f"[EXPORT/REWRITE ERROR] {name}: {type(e).__name__}: {str(e)[:300]}")
        return ("error", name)
    if nf == 0:
        print(f"[NOT FUSED] {name}")
        return ("notfused", name)
    status = "ok"
    for mode in modes:
        for t in range(ntries):
            x = make_x()
            try:
                with mode_ctx(mode):
                    want = m(*x)
                with mode_ctx(mode):
                    got = fm(*x)
            except Exception as e:
                print(f"[CALL ERROR] {name} mode={mode}: {type(e).__name__}: {str(e)[:400]}")
                status = "error"; break
            want = want.detach(); got = got.detach()
            if got.shape != want.shape or got.dtype != want.dtype:
                print(f"[SHAPE/DTYPE] {name} {mode}: {got.shape} {got.dtype} vs {want.shape} {want.dtype}")
                status = "mismatch"; break
            if not torch.equal(got, want):
                d = (got != want)
                nd = int(d.sum())
                mx = float((got.float() - want.float()).abs().max())
                print(f"[MISMATCH] {name} mode={mode} try={t}: {nd}/{want.numel()} ({100*nd/want.numel():.1f}%) differ, max abs diff {mx:.3g}")
                status = "mismatch"; break
    if status == "ok" and not quiet:
        print(f"[ok] {name} (fused={nf}) modes={modes}")
    return (status, name)
