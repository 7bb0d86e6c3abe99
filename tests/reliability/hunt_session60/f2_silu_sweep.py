# SiLU (and other decomposed activations) under the torch.compile backend on the CPU: identity linear so the
# pre-activations are exactly the inputs; every finite 16-bit value; compare against eager bit for bit.
import os
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"]="0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"]="0"
import torch, fxfuse, torch.nn.functional as F, sys
class IdLin(torch.nn.Module):
    def __init__(s,n,dt,act):
        super().__init__(); s.register_buffer("w",torch.eye(n).to(dt)); s.register_buffer("b",torch.zeros(n).to(dt)); s.act=act
    def forward(s,x): return s.act(F.linear(x,s.w,s.b))
acts={"silu":F.silu,"sigmoid":torch.sigmoid,"tanh":torch.tanh,"mish":F.mish,"softplus":F.softplus,"elu":F.elu,"hardswish":F.hardswish,"gelu":F.gelu,"gelu_tanh":lambda v:F.gelu(v,approximate="tanh")}
names=sys.argv[1:] or list(acts)
for dt in [torch.bfloat16, torch.float16, torch.float32]:
    n=256
    if dt==torch.float32:
        x=(torch.randn(1024,n)*4)
    else:
        allv=torch.arange(-32768,32768,dtype=torch.int32).to(torch.int16).view(dt)
        allv=allv[torch.isfinite(allv)]
        pad=(-allv.numel())%n; x=torch.cat([allv,torch.zeros(pad,dtype=dt)+1]).view(-1,n)
    for name in names:
        m=IdLin(n,dt,acts[name])
        torch._dynamo.reset(); fxfuse.reset_stats()
        with torch.no_grad():
            got=torch.compile(m,backend=fxfuse.backend_with(only_profitable=False))(x)
            fused=fxfuse.stats()["chains_fused"]
            torch._dynamo.reset(); ind=torch.compile(m)(x)
            want=m(x)
        iv=torch.int16 if dt!=torch.float32 else torch.int32
        bad=(got.view(iv)!=want.view(iv)); badi=(ind.view(iv)!=want.view(iv))
        ex=""
        if bad.any():
            i=bad.nonzero()[0]; ex=f" e.g. x={x[i[0],i[1]].item()!r} fused={got[i[0],i[1]].item()!r} eager={want[i[0],i[1]].item()!r} inductor={ind[i[0],i[1]].item()!r}"
        print(f"{str(dt):15s} {name:10s} fused={fused} fused!=eager: {int(bad.sum())}  inductor!=eager: {int(badi.sum())}{ex}")
