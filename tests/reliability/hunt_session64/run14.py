import sys, re; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
f16, bf16 = torch.float16, torch.bfloat16

def run(name, model, x, decomp=False, strict=False, show=False):
    try:
        ep = torch.export.export(model, (x,), strict=strict)
        if decomp:
            ep = ep.run_decompositions()
        rep = fxfuse.report(ep)
        ep2 = fxfuse.rewrite(ep)
        mod = ep2.module()
        oks = []
        for _ in range(2):
            xx = torch.randn_like(x.float()).to(x.dtype)
            oks.append(torch.equal(mod(xx), model(xx)))
        print(f"{'ok' if all(oks) else 'WRONG'} {name}: {len(specs(ep2))} chains; {[ (e['status'], e.get('chain',''), (e.get('prologue_stops') or [''])[0][:140]) for e in rep.entries]}")
        if show:
            for s in specs(ep2): print(s)
        return mod
    except Exception as e:
        import traceback; traceback.print_exc(limit=-3)
        print(f"CRASH {name}: {type(e).__name__}: {str(e)[:400]}")

x = torch.randn(3, 256).half()
run("decomp baseline", Q(256, 64, 64), x, decomp=True, show=True)
run("decomp bias", Q(256, 64, 64, bias=True), x, decomp=True)
run("decomp linear", Q(256, 64, 64, bias=True, form="linear"), x, decomp=True)
run("decomp act_order", Q(256, 64, 64, act_order=True), x, decomp=True)
run("decomp old+1", Q(256, 64, 64, zmode="old_plus1_after_and"), x, decomp=True)
run("decomp wf attr", Q(256, 64, 64, wf_mode="attr"), x, decomp=True)
run("decomp wf arange", Q(256, 64, 64, wf_mode="arange"), x, decomp=True)
run("decomp 3-D bf16 scales f16", Q(256, 64, 64), torch.randn(2, 3, 256).to(bf16), decomp=True)
run("strict export", Q(256, 64, 64, bias=True), x, strict=True)
run("strict export wf attr", Q(256, 64, 64, wf_mode="attr"), x, strict=True)

# inference-mode
with torch.inference_mode():
    m = Q(256, 64, 64)
    xi = torch.randn(3, 256).half()
mod = run("model built under inference_mode", m, xi.clone())
if mod is not None:
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        print("   equal", torch.equal(mod(xi), m(xi)))
        print("   warnings:", [str(x.message)[:150] for x in w])
    with torch.inference_mode():
        mod.g_idx.copy_(mod.g_idx.flip(0))
    try:
        mod(xi); print("   NO-RAISE after inference write")
    except RuntimeError as e:
        print("   raised:", "no longer holds" in str(e))
