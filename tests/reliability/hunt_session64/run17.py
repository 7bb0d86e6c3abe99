import sys, re, copy; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
def expect_raise(name, fn, pat="no longer holds"):
    try:
        fn(); print(f"   NO-RAISE {name}")
    except Exception as e:
        ok = re.search(pat, str(e)) is not None
        print(f"   {'raised-ok' if ok else 'RAISED-OTHER'} {name}: {'' if ok else type(e).__name__ + ': ' + str(e)[:300]}")
model = Q(256, 64, 64, bias=True)
x = torch.randn(3, 256).half()
ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
# run_decompositions after rewrite
try:
    ep3 = ep2.run_decompositions()
    print("decomp after rewrite:", torch.equal(ep3.module()(x), model(x)), len(specs(ep3)))
except Exception as e:
    print("CRASH decomp after rewrite", type(e).__name__, str(e)[:300])
# re-export of rewritten module
try:
    ep4 = torch.export.export(ep2.module(), (x,))
    m4 = ep4.module()
    print("re-export:", torch.equal(m4(x), model(x)), len(specs(ep4)))
    m4.g_idx.copy_(m4.g_idx.flip(0))
    expect_raise("re-exported g_idx flip", lambda: m4(x))
except Exception as e:
    print("CRASH re-export", type(e).__name__, str(e)[:300])
# unflatten
try:
    from torch.export import unflatten
    u = unflatten(ep2)
    print("unflatten:", torch.equal(u(x), model(x)))
except Exception as e:
    print("CRASH unflatten", type(e).__name__, str(e)[:300])
# deepcopy module
m = ep2.module()
m2 = copy.deepcopy(m)
print("deepcopy:", torch.equal(m2(x), model(x)))
m2.g_idx.copy_(m2.g_idx.flip(0))
expect_raise("deepcopy g_idx flip", lambda: m2(x))
print("original unaffected:", torch.equal(m(x), model(x)))
# load_state_dict(assign=True) with act-order g_idx
sd = {k: v.clone() for k, v in model.state_dict().items()}
sd["g_idx"] = sd["g_idx"][torch.randperm(256)]
m3 = ep2.module()
m3.load_state_dict(sd, strict=False, assign=True)
expect_raise("assign=True act-order g_idx", lambda: m3(x))
# g_idx as int64 tensor via assign (dtype change)
sd["g_idx"] = (torch.arange(256) // 64)
m3.load_state_dict(sd, strict=False, assign=True)
try:
    r = m3(x); print("   g_idx int64 assigned (same values): ran; equal:", torch.equal(r, model(x)))
except Exception as e:
    print("   g_idx int64 assigned raised:", type(e).__name__, str(e)[:250])
# qweight changed dtype
m5 = ep2.module()
m5.qweight = m5.qweight.long()
try:
    r = m5(x); print("   qweight int64: ran", torch.equal(r, model(x)))
except Exception as e:
    print("   qweight int64 raised:", type(e).__name__, str(e)[:250])
# qweight non-contiguous (transposed storage) same values
m6 = ep2.module()
m6.qweight = model.qweight.t().contiguous().t()
print("   qweight non-contig:", torch.equal(m6(x), model(x)))
m6.g_idx = model.g_idx.clone()[None].expand(2, -1)[0]
print("   g_idx expanded view same values:", torch.equal(m6(x), model(x)))
m6.g_idx = torch.stack([model.g_idx, model.g_idx], 1)[:, 0]   # strided view
print("   g_idx strided view same values:", torch.equal(m6(x), model(x)))
m6.g_idx = (torch.stack([model.g_idx, model.g_idx.flip(0)], 1)[:, 1])
expect_raise("g_idx strided view flipped", lambda: m6(x))
# wf strided/neg
m7 = ep2.module()
m7.wf = torch.tensor([[0, 4, 8, 12, 16, 20, 24, 28]], dtype=torch.int32).neg()._neg_view() if hasattr(torch.Tensor, "_neg_view") else m7.wf
try:
    print("   wf neg view (same values):", torch.equal(m7(x), model(x)))
except Exception as e:
    print("   wf neg view raised", type(e).__name__, str(e)[:200])
