"""Shared harness: export -> rewrite -> compare bit-exact with eager."""
import sys, traceback, warnings
warnings.filterwarnings("ignore")
import torch, torch.nn.functional as F
import fxfuse

gemm_chain = torch.ops.fxfuse.gemm_chain.default
torch.manual_seed(0)

def packed(*shape, dtype=torch.uint8):
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, dtype=torch.int8)
    if dtype in (torch.int16, torch.int32):
        return torch.randint(0, 256, shape, dtype=dtype)
    return torch.randint(0, 256, shape, dtype=dtype)

def scale(*shape, dtype=torch.bfloat16):
    s = (torch.rand(*shape) * 0.02 + 0.001) * torch.where(torch.rand(*shape) < 0.5, -1, 1)
    return s.to(dtype)

def specs(ep):
    return [n.args[1] for n in ep.graph.nodes if n.target == gemm_chain]

def left(ep):
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function" and n.target != gemm_chain
            and "getitem" not in str(n.target) and "assert" not in str(n.target)]

def outs_equal(a, b):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(outs_equal(x, y) for x, y in zip(a, b))
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a, b)

def maxdiff(a, b):
    if isinstance(a, (tuple, list)):
        return [maxdiff(x, y) for x, y in zip(a, b)]
    if a.shape != b.shape: return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.dtype != b.dtype: return f"dtype {a.dtype} vs {b.dtype}"
    return (a.double() - b.double()).abs().max().item()

RESULTS = []

def check(name, model, args, fresh=None, dynamic_shapes=None, decompose=False, expect_fold=None, show_report=False,
          quiet=False):
    """expect_fold: True = must have a 'p' input, False = must NOT, None = either."""
    status = "OK"
    info = ""
    try:
        ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
        if decompose:
            ep = ep.run_decompositions()
        ep2 = fxfuse.rewrite(ep, only_profitable=False)
        sp = specs(ep2)
        folded = any(",p" in s or "[p" in s for s in sp)
        info = f"chains={len(sp)} folded_p={folded} left={left(ep2)}"
        if expect_fold is not None and folded != expect_fold:
            status = "UNEXPECTED_FOLD" if folded else "NOT_FOLDED"
        for a in ([args] + (fresh or [])):
            got = ep2.module()(*a)
            want = model(*a)
            if not outs_equal(got, want):
                status = "MISMATCH"
                info += f" maxdiff={maxdiff(got, want)}"
                break
        if show_report or status != "OK" or not quiet:
            for s in sp: info += "\n  SPEC:\n    " + s.replace("\n", "\n    ")
        if show_report:
            info += "\n  REPORT:\n" + str(fxfuse.report(ep, only_profitable=False))
    except Exception as e:
        status = "ERROR"
        info += " " + "".join(traceback.format_exception_only(type(e), e)).strip()[:1500]
    RESULTS.append((name, status))
    print(f"[{status}] {name}: {info}")
    sys.stdout.flush()
    return status

def summary():
    ok = sum(1 for _, s in RESULTS if s == "OK")
    print(f"\n== {ok}/{len(RESULTS)} OK")
    for n, s in RESULTS:
        if s != "OK": print("  ", s, n)
