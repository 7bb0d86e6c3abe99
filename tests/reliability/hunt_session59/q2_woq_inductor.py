# Finding 2: under backend="fxfuse", Inductor's own CPU weight-only-int8 lowering (woq_int8 ->
# aten._weight_int8pack_mm) takes issue 7's `linear(x, w_i8.to(bf16)) * s` form (3-D x, bf16 scale)
# before fxfuse's post-grad pass: the report says "(no GEMM in this graph)", stats gemms_seen=0,
# and the answer is Inductor's (not eager's bits).
import os, sys
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
sys.path.insert(0, "python")
import warnings; warnings.filterwarnings("ignore")
import torch, torch.nn.functional as F, fxfuse
torch.manual_seed(0)
N, K = 96, 128
class QLinearAfter(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.register_buffer("qweight", torch.randint(-128, 128, (N, K), dtype=torch.int8))
        s.scales = torch.nn.Parameter(torch.rand(N).bfloat16() * 0.02, requires_grad=False)
        s.bias = torch.nn.Parameter(torch.randn(N).bfloat16())
    def forward(s, x):
        return F.linear(x, s.qweight.to(x.dtype)) * s.scales + s.bias
m = QLinearAfter().eval()
x = torch.randn(2, 12, K).bfloat16()
with torch.no_grad():
    want = m(x)
    got = torch.compile(m, backend="fxfuse")(x)
print("mismatching bf16 elements vs eager:", int((got != want).sum()), "of", want.numel())
print(fxfuse.report()); print("gemms_seen", fxfuse.stats()["gemms_seen"])
# the same program through fxfuse.rewrite fuses and gives eager's bits:
ep2 = fxfuse.rewrite(torch.export.export(m, (x,)))
with torch.no_grad():
    print("rewrite: mismatches", int((ep2.module()(x) != want).sum()))
print(fxfuse.report(torch.export.export(m, (x,))))
torch._dynamo.reset()
with torch.no_grad():
    ind = torch.compile(m)(x)   # plain Inductor: the same answer, so the numbers are Inductor's lowering
print("plain inductor mismatches vs eager:", int((ind != want).sum()), "; fxfuse vs inductor:", int((got != ind).sum()))
