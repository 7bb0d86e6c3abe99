# Run: cd /work/main && TORCHINDUCTOR_FX_COMPILE_MODE=subprocess TORCHINDUCTOR_FX_GRAPH_CACHE=0 TORCHINDUCTOR_AUTOGRAD_CACHE=0 PYTHONPATH=python python3 tests/reliability/hunt_session59/c1_subprocess_compile_mode.py
# (also TORCHINDUCTOR_FX_COMPILE_MODE=serialize)
import torch, torch.nn as nn, torch.nn.functional as F
import fxfuse
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)).eval()
x = torch.randn(32, 64)
with torch.no_grad():
    yi = torch.compile(m, backend="inductor")(x)
    torch._dynamo.reset(); fxfuse.reset_stats()
    y = torch.compile(m, backend="fxfuse")(x)
s = fxfuse.stats()
print("chains_fused", s["chains_fused"], "graphs_seen", s["graphs_seen"], "graphs_from_inductor_cache", s["graphs_from_inductor_cache"])
print("bitwise equal to plain inductor (nothing fused):", torch.equal(y, yi))
print(fxfuse.report())
