import sys, traceback, torch
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "..", "..", "python"))
import fxfuse
gemm_chain = torch.ops.fxfuse.gemm_chain.default

def specs(ep):
    return [n.args[1] for n in ep.graph.nodes if n.target == gemm_chain]

def left(ep):
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function" and n.target != gemm_chain
            and "getitem" not in str(n.target) and "assert" not in str(n.target)]

def rand_int32(*shape):
    return torch.randint(-2**31, 2**31 - 1, shape, dtype=torch.int32)

def eq(a, b):
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)

RESULTS = []

def check(name, model, make_args, dynamic_shapes=None, trials=2, show_spec=False, show_report=True, expect_fused=None,
          verbose=False, **rw):
    status = "ok"
    try:
        args = make_args()
        ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
        try:
            rep = fxfuse.report(ep)
            rep_lines = [(e.get("status"), e.get("chain", "") or "", e.get("reason", ""), e.get("detail", ""),
                          e.get("prologue_stops")) for e in rep.entries]
        except Exception as e:
            rep_lines = [("REPORT CRASH", repr(e))]
            status = "REPORT-CRASH"
        ep2 = fxfuse.rewrite(ep, **rw)
        sp = specs(ep2)
        mod = ep2.module()
        for t in range(trials):
            a = make_args()
            got = mod(*a)
            want = model(*a)
            if not eq(got, want):
                status = "WRONG"
                if isinstance(got, torch.Tensor):
                    print(f"   [{name}] mismatch: dtype {got.dtype}/{want.dtype} shape {tuple(got.shape)}/{tuple(want.shape)}",
                          (got.double() - want.double()).abs().max().item() if got.shape == want.shape else "")
                break
        nf = len(sp)
        print(f"{status:6s} {name}: {nf} fused chain(s); left={sorted(set(left(ep2)))[:12] if verbose else len(left(ep2))}")
        if show_report:
            for l in rep_lines:
                print("        report:", l)
        if show_spec:
            for s in sp:
                print("        spec:\n" + "\n".join("          " + x for x in s.splitlines()))
        RESULTS.append((name, status, nf))
        return ep, ep2, mod
    except Exception as e:
        print(f"CRASH  {name}: {type(e).__name__}: {str(e)[:600]}")
        traceback.print_exc(limit=-4)
        RESULTS.append((name, "CRASH", 0))
        return None
