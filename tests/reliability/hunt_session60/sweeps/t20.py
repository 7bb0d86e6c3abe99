import torch, fxfuse
GC=torch.ops.fxfuse.gemm_chain.default
bf=torch.bfloat16
def i8(*s): return torch.randint(-128,128,s,dtype=torch.int8)
def sc(*s): return (torch.rand(*s)*0.02+0.001).to(bf)
def t(name, inputs, sp, want=None):
    try:
        out=GC(inputs, sp)[0]; print(f"[RAN] {name}: shape {tuple(out.shape)}" + ("" if want is None else f" equal={torch.equal(out,want)}"))
    except Exception as e: print(f"[ERR] {name}: {type(e).__name__}: {str(e).splitlines()[0][:250]}")
sp=("fxfuse.chain v1\ngemm bmm kgroup 32\n%0 = input 0 bf16 [b,m,k]\n%1 = input 1 i8 [b,k,n]\n%2 = convert %1 : bf16\n"
    "%3 = input 2 bf16 [b,g,n]\n%4 = mul %2 %3 : bf16\n%5 = mm %0 %4 : bf16\noutput %5\n")
x=torch.randn(2,4,128).to(bf); w=i8(2,128,16); s=sc(2,4,16)
want=torch.bmm(x,(w.view(2,4,32,16).to(bf)*s[:,:,None,:]).view(2,128,16))
t("bmm ok", [x,w,s], sp, want)
t("bmm wrong g", [x,w,sc(2,3,16)], sp)
t("bmm wrong b in scale", [x,w,sc(3,4,16)], sp)
t("bmm g scale [1,g,n]->'b' mismatch", [x,w,sc(1,4,16)], sp)
sp2=("fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 i8 [m,m,k]\n%1 = convert %0 : bf16\n%2 = input 1 bf16 [m,m,g]\n%3 = mul %1 %2 : bf16\n"
     "%4 = input 2 bf16 [n,k]\n%5 = mm %3 %4 : bf16\noutput %5\n")
xq=i8(2,3,128); sx=sc(2,3,4); wf=torch.randn(16,128).to(bf)
want=(xq.view(2,3,4,32).to(bf)*sx[...,None]).view(2,3,128) @ wf.t()
t("A 3D [m,m,g] ok", [xq,sx,wf], sp2, want)
t("A 3D [m,m,g] wrong g", [xq,sc(2,3,5),wf], sp2)
t("A 3D [m,m,g] m mismatch", [xq,sc(3,2,4),wf], sp2)
t("A 3D [m,m,g] flattened m", [xq,sc(6,4).view(6,4).unsqueeze(0).expand(1,6,4),wf], sp2)
t("int64 g overflow huge kgroup w/ small K", [torch.randn(2,1048576).to(bf),i8(1,1048576),sc(1,1)], sp.replace("bmm","mm").replace("kgroup 32","kgroup 1048576").replace("[b,m,k]","[m,k]").replace("[b,k,n]","[n,k]").replace("[b,g,n]","[n,g]"))
