import torch, fxfuse
GC=torch.ops.fxfuse.gemm_chain.default
bf=torch.bfloat16
def i8(*s): return torch.randint(-128,128,s,dtype=torch.int8)
def sc(*s): return (torch.rand(*s)*0.02+0.001).to(bf)
def spec(kg, sdims="[n,g]", wdims="[n,k]", adims="[m,k]", gemm="mm"):
    return (f"fxfuse.chain v1\ngemm {gemm}{' kgroup '+str(kg) if kg is not None else ''}\n%0 = input 0 bf16 {adims}\n%1 = input 1 i8 {wdims}\n"
            f"%2 = convert %1 : bf16\n%3 = input 2 bf16 {sdims}\n%4 = mul %2 %3 : bf16\n%5 = {gemm} %0 %4 : bf16\noutput %5\n")
def t(name, inputs, sp):
    try:
        out=GC(inputs, sp); print(f"[RAN] {name}: shape {tuple(out[0].shape)}")
        return out
    except Exception as e: print(f"[ERR] {name}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
x=torch.randn(4,128).to(bf); w=i8(16,128)
t("ok", [x,w,sc(16,4)], spec(32))
t("wrong g", [x,w,sc(16,5)], spec(32))
t("K not divisible (K=100,G=32,g=3)", [torch.randn(4,100).to(bf),i8(16,100),sc(16,3)], spec(32))
t("K not divisible (K=100,G=32,g=4)", [torch.randn(4,100).to(bf),i8(16,100),sc(16,4)], spec(32))
t("kgroup 0", [x,w,sc(16,4)], spec(0))
t("kgroup -1", [x,w,sc(16,4)], spec(-1))
t("kgroup 2^20+1", [x,w,sc(16,4)], spec(2**20+1))
t("kgroup 2^31", [x,w,sc(16,4)], spec(2**31))
t("kgroup 1e3x", [x,w,sc(16,4)], spec("32x"))
t("no kgroup with g", [x,w,sc(16,4)], spec(None))
t("kgroup without g", [x,w,sc(16,128)], spec(32,sdims="[n,k]"))
t("g and k in one input", [x,w,sc(16,4,128)], spec(32,sdims="[n,g,k]"))
t("two g", [x,w,sc(4,4)], spec(32,sdims="[g,g]"))
t("g only [g]", [x,w,sc(4)], spec(32,sdims="[g]"))
t("g [g,1]", [x,w,sc(4,1)], spec(32,sdims="[g,1]"))
t("g [1,g]", [x,w,sc(1,4)], spec(32,sdims="[1,g]"))
t("g in A input", [x,w,sc(4,4)], spec(32,sdims="[m,g]"))
t("g size 0 K=0", [torch.randn(4,0).to(bf),i8(16,0),sc(16,0)], spec(32))
t("M=0", [torch.randn(0,128).to(bf),w,sc(16,4)], spec(32))
t("N=0", [x,i8(0,128),sc(0,4)], spec(32))
t("g non-contig", [x,w,sc(4,16).t()], spec(32))
t("g expanded stride0", [x,w,sc(16,1).expand(16,4)], spec(32))
# g only in A-space where A itself has g? A input [m,g]
sp=("fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,g]\n%1 = input 1 bf16 [n,k]\n%2 = mm %0 %1 : bf16\noutput %2\n")
t("A operand itself [m,g]", [sc(4,4),torch.randn(16,128).to(bf)], sp)
sp=("fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [n,g]\n%2 = mm %0 %1 : bf16\noutput %2\n")
t("B operand itself [n,g]", [x,sc(16,4)], sp)
sp=("fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,g]\n%1 = input 1 bf16 [n,g]\n%2 = mm %0 %1 : bf16\noutput %2\n")
t("A,B both [.,g] no k", [sc(4,4),sc(16,4)], sp)
sp=("fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [n,k]\n%2 = mm %0 %1 : bf16\n%3 = input 2 bf16 [m,g]\n%4 = add %2 %3 : bf16\noutput %4\n")
t("epilogue input with g", [x,torch.randn(16,128).to(bf),sc(4,4)], sp)
# meta / fake tensor
from torch._subclasses.fake_tensor import FakeTensorMode
with FakeTensorMode() as fm:
    t("fake wrong g", [torch.empty(4,128,dtype=bf),torch.empty(16,128,dtype=torch.int8),torch.empty(16,5,dtype=bf)], spec(32))
t("meta wrong g", [torch.empty(4,128,dtype=bf,device='meta'),torch.empty(16,128,dtype=torch.int8,device='meta'),torch.empty(16,5,dtype=bf,device='meta')], spec(32))
# bmm
t("bmm ok", [torch.randn(2,4,128).to(bf), i8(2,128,16), sc(2,4,16)], spec(32,"[b,g,n]","[b,k,n]","[b,m,k]","bmm"))
t("bmm wrong g", [torch.randn(2,4,128).to(bf), i8(2,128,16), sc(2,3,16)], spec(32,"[b,g,n]","[b,k,n]","[b,m,k]","bmm"))
# correctness of direct call
x=torch.randn(4,128).to(bf); s=sc(4,16).t()
out=GC([x,w,s], spec(32))[0]
want=x @ (w.view(16,4,32).to(bf)*s[:,:,None]).view(16,128).t()
print("noncontig g equal:", torch.equal(out,want))
s=sc(16,1).expand(16,4); out=GC([x,w,s], spec(32))[0]
want=x @ (w.view(16,4,32).to(bf)*s[:,:,None]).view(16,128).t(); print("expanded g equal:", torch.equal(out,want))
