import os; os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"]="0"
import torch, torch.nn.functional as F
bf=torch.bfloat16
allb = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(bf)
allb = allb[torch.isfinite(allb)]
def dec_tanh(v):  # the post-grad ops, evaluated op by op with ATen (what reference_eval does)
    x=v.float(); h=x*0.5; c=(x*x)*x*0.044715; i=(x+c)*0.7978845608028654
    return (h*(torch.tanh(i)+1)).to(bf)
def dec_erf(v):
    x=v.float(); return ((x*0.5)*(torch.erf(x*0.7071067811865476)+1)).to(bf)
for name, approx, dec in (("tanh","tanh",dec_tanh),("erf","none",dec_erf)):
    e = F.gelu(allb, approximate=approx)
    ind = torch.compile(lambda t: F.gelu(t, approximate=approx))(allb); torch._dynamo.reset()
    ref = dec(allb)
    ne = lambda a,b: ((a.view(torch.int16)!=b.view(torch.int16))).sum().item()
    print(f"gelu[{name}] over {allb.numel()} finite bf16: eager vs Inductor {ne(e,ind)}, eager vs ATen-op-by-op {ne(e,ref)}, Inductor vs op-by-op {ne(ind,ref)}")
    k=((e.view(torch.int16)!=ref.view(torch.int16))).nonzero().flatten()
    print("   examples x, eager, op-by-op:", [(allb[j].item(), e[j].item(), ref[j].item()) for j in k[:4].tolist()], "x range", allb[k].float().min().item() if len(k) else None, allb[k].float().max().item() if len(k) else None)
e = F.gelu(allb); ind = torch.compile(lambda t: F.gelu(t))(allb); ref = dec_erf(allb)
k=((ind.view(torch.int16)!=ref.view(torch.int16))).nonzero().flatten()
print("erf Inductor vs op-by-op:", [(allb[j].item(), e[j].item(), ind[j].item(), ref[j].item()) for j in k.tolist()])
k=((ind.view(torch.int16)!=e.view(torch.int16))).nonzero().flatten()
import collections
print("erf eager vs Inductor: subnormal x count", (allb[k].float().abs()<1.18e-38).sum().item(), "others", [(allb[j].item(), e[j].item(), ind[j].item()) for j in k.tolist() if abs(allb[j].item())>=1.18e-38][:6])
