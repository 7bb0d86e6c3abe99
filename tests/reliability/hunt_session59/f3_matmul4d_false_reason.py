# Finding 3: a 4-D @ 4-D aten.matmul with equal batch dims (attention's q @ k^T in an export without
# run_decompositions) is refused "unsupported_shape: matmul that broadcasts or has a 1-D operand";
# it neither broadcasts nor has a 1-D operand. The same product in 3-D fuses (matmul -> mul).
# Run: cd /work/main && PYTHONPATH=python python3 tests/reliability/hunt_session59/f3_matmul4d_false_reason.py
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse
class QK(torch.nn.Module):
    def forward(s, q, k): return (q @ k.transpose(-1, -2)) * 0.35
for shape in [(2, 4, 8, 8), (8, 8, 8)]:
    q, k = torch.randn(*shape), torch.randn(*shape)
    ep = torch.export.export(QK(), (q, k))
    print(shape, [str(n.target) for n in ep.graph.nodes if n.op == "call_function"])
    print(fxfuse.report(ep))
