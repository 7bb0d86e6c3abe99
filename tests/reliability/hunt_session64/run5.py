import sys, re; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
f16 = torch.float16

def expect_raise(name, fn, pat="no longer holds"):
    try:
        fn()
        print(f"   NO-RAISE {name}")
    except Exception as e:
        ok = re.search(pat, str(e)) is not None
        print(f"   {'raised-ok' if ok else 'RAISED-OTHER'} {name}: {type(e).__name__}: {str(e)[:200] if not ok else ''}")

def same(name, mod, model, x):
    g, w = mod(x), model(x)
    print(f"   {'same' if torch.equal(g, w) else 'WRONG'} {name}")

for wf_mode in ("persistent", "nonpersistent", "attr"):
    print("== wf mode", wf_mode)
    model = Q(256, 64, 64, wf_mode=wf_mode, bias=True)
    x = torch.randn(3, 256).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    mod = ep2.module()
    same("initial", mod, model, x)
    print("   state_dict keys:", list(mod.state_dict().keys()))
    print("   named_buffers:", [n for n, _ in mod.named_buffers()])
    print("   attrs:", [n for n in dir(mod) if 'wf' in n or 'constant' in n])
    # new qweight via load_state_dict
    sd = model.state_dict()
    sd2 = {k: v.clone() for k, v in sd.items()}
    sd2["qweight"] = rand_int32(*sd["qweight"].shape)
    sd2["qzeros"] = rand_int32(*sd["qzeros"].shape)
    sd2["scales"] = torch.randn_like(sd["scales"].float()).half()
    model.load_state_dict(sd2)
    mod.load_state_dict(sd2, strict=False)
    same("after new qweight/qzeros/scales via load_state_dict", mod, model, x)
    # act order g_idx via load_state_dict
    sd3 = dict(sd2); sd3["g_idx"] = sd2["g_idx"][torch.randperm(256)]
    mod.load_state_dict(sd3, strict=False)
    expect_raise("g_idx act-order via load_state_dict", lambda: mod(x))
    mod.load_state_dict(sd2, strict=False)
    same("g_idx restored", mod, model, x)
    # wf change
    wfname = [n for n in dir(mod) if n == "wf" or "constant" in n]
    if wf_mode == "persistent":
        sd4 = dict(sd2); sd4["wf"] = torch.tensor([[0, 4, 8, 12, 16, 20, 28, 24]], dtype=torch.int32)
        mod.load_state_dict(sd4, strict=False)
        expect_raise("wf via load_state_dict", lambda: mod(x))
        mod.load_state_dict(sd2, strict=False)
        same("wf restored", mod, model, x)
    else:
        # find the tensor holding wf values
        cands = [(n, t) for n, t in list(mod.named_buffers()) + [(n, getattr(mod, n)) for n in dir(mod) if isinstance(getattr(mod, n, None), torch.Tensor)]
                 if t.dtype == torch.int32 and t.shape == (1, 8)]
        print("   wf candidates:", [n for n, _ in cands])
        n, t = cands[0]
        t[0, 7] = 27
        expect_raise(f"wf {n} write", lambda: mod(x))
        t[0, 7] = 28
        same("wf restored", mod, model, x)
    # g_idx shift by one group (other kgroups): still kgroups-like but different G
    gi = mod.g_idx.clone()
    mod.g_idx.copy_(torch.arange(256, dtype=torch.int32) // 128)
    expect_raise("g_idx other G", lambda: mod(x))
    mod.g_idx.copy_(gi)
    same("restored2", mod, model, x)
