import os
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"]="0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"]="0"
import torch, fxfuse, traceback
import torch.nn.functional as F
def i8(*s): return torch.randint(-128,128,s,dtype=torch.int8)
def sc(*s, dtype=torch.bfloat16):
    s_=(torch.rand(*s)*0.02+0.001)*torch.where(torch.rand(*s)<0.5,-1,1); return s_.to(dtype)
def bits(a,b):
    if a.dtype!=b.dtype or a.shape!=b.shape: return False
    if a.dtype in (torch.bfloat16,torch.float16): return torch.equal(a.view(torch.int16),b.view(torch.int16))
    if a.dtype==torch.float32: return torch.equal(a.view(torch.int32),b.view(torch.int32))
    return torch.equal(a,b)
def bcheck(name, model, mk, tries=3, grad=False, verbose=False, compare_inductor=False, dynamic=None):
    try:
        torch._dynamo.reset(); fxfuse.reset_stats()
        cm=torch.compile(model, backend=fxfuse.backend_with(only_profitable=False), dynamic=dynamic)
        if compare_inductor:
            torch._dynamo.reset(); ci=torch.compile(model, dynamic=dynamic)
        ok=True; info=""
        for _ in range(tries):
            a=mk()
            if grad:
                got=cm(*a)
            else:
                with torch.no_grad(): got=cm(*a)
            with torch.no_grad(): want=model(*a)
            if compare_inductor:
                with torch.no_grad(): want_i=ci(*a)
            g=got if isinstance(got,tuple) else (got,); w=want if isinstance(want,tuple) else (want,)
            for gg,ww in zip(g,w):
                if not bits(gg.detach(),ww):
                    ok=False; d=(gg.detach().float()-ww.float()).abs(); info=f"maxdiff={d.max().item():.3g} n={int((d>0).sum())}/{d.numel()} nan={gg.isnan().sum().item()}"
                    if compare_inductor:
                        wi=want_i if isinstance(want_i,tuple) else (want_i,)
                        info += f" inductor_eq_eager={[bits(x,y) for x,y in zip(wi,w)]} fused_eq_inductor={[bits(x.detach(),y) for x,y in zip(g,wi)]}"
            if grad:
                sum(x.float().sum() for x in g).backward()
        st=fxfuse.stats()
        print(f"[{'OK ' if ok else 'BAD'}] {name}: fused={st.get('chains_fused')} {info}")
        if verbose: print(st)
    except Exception as e:
        print(f"[EXC] {name}: {type(e).__name__}: {str(e)[:800]}")
        if verbose: traceback.print_exc()
