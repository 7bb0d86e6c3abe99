import torch, fxfuse, sys, traceback
import torch.nn.functional as F
GC = torch.ops.fxfuse.gemm_chain.default
def i8(*s): return torch.randint(-128,128,s,dtype=torch.int8)
def sc(*s, dtype=torch.bfloat16):
    s_=(torch.rand(*s)*0.02+0.001)*torch.where(torch.rand(*s)<0.5,-1,1); return s_.to(dtype)
def specs(ep): return [n.args[1] for n in ep.graph.nodes if n.target==GC]
def check(name, model, mk, decompose=False, dyn=None, verbose=False, tries=3):
    try:
        args=mk()
        ep=torch.export.export(model,args,dynamic_shapes=dyn)
        if decompose: ep=ep.run_decompositions()
        rep=str(fxfuse.report(ep,only_profitable=False))
        ep2=fxfuse.rewrite(ep,only_profitable=False)
        sp=specs(ep2)
        ok=True; info=""
        for _ in range(tries):
            a=mk()
            with torch.no_grad():
                got=ep2.module()(*a); want=model(*a)
            if isinstance(got,torch.Tensor): got,want=(got,),(want,)
            for g,w in zip(got,want):
                if not torch.equal(g,w):
                    ok=False; d=(g.float()-w.float()).abs(); info=f"maxdiff={d.max().item():.3g} n={int((d>0).sum())}/{d.numel()} nan_g={g.isnan().sum().item()} nan_w={w.isnan().sum().item()}"
        kg=[s.split('\n')[1] for s in sp]
        print(f"[{'OK ' if ok else 'BAD'}] {name}: chains={len(sp)} gemm={kg} {info}")
        if verbose or not ok:
            for s in sp: print(s)
            print(rep)
        return ep2
    except Exception as e:
        print(f"[EXC] {name}: {type(e).__name__}: {str(e)[:600]}")
        if verbose: traceback.print_exc()
