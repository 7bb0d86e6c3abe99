# Which common epilogues the torch.compile backend still fuses after decomposed_groups.py (bf16, CPU), and whether
# each matches eager bit for bit (gelu / gelu_tanh: the CPU trade-offs of the README). Session 57.
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse, torch.nn.functional as F
ops = {
 "relu": torch.relu, "leaky_relu": lambda y: F.leaky_relu(y, 0.1), "hardswish": F.hardswish, "gelu": F.gelu,
 "gelu_tanh": lambda y: F.gelu(y, approximate="tanh"), "silu": F.silu, "elu": F.elu, "selu": F.selu, "celu": F.celu,
 "mish": F.mish, "softplus": F.softplus, "hardsigmoid": F.hardsigmoid, "relu6": F.relu6, "hardtanh": F.hardtanh,
 "clamp": lambda y: y.clamp(-1.5, 2.5), "sigmoid": torch.sigmoid, "tanh": torch.tanh, "pow2": lambda y: y.pow(2),
 "rsqrt": lambda y: torch.rsqrt(y.abs() + 1), "logsigmoid": F.logsigmoid, "round_d1": lambda y: torch.round(y, decimals=1),
 "scale_bias_relu": lambda y: torch.relu(y * 0.5 + 1), "hardshrink": F.hardshrink, "threshold": lambda y: F.threshold(y, 0.1, 20.0),
 "softshrink": F.softshrink, "lerp": lambda y: torch.lerp(y, y * 0, 0.3), "nan_to_num": torch.nan_to_num, "frac": torch.frac,
 "silu_mul": lambda y: F.silu(y) * y, "square": torch.square, "exp2": torch.exp2, "erfc": torch.erfc, "sinh": torch.sinh,
}
for dt in (torch.bfloat16,):
    for name, f in ops.items():
        class M(torch.nn.Module):
            def forward(self, x, w): return f(x @ w.t())
        x = torch.randn(64, 32, dtype=dt); w = torch.randn(128, 32, dtype=dt)
        torch._dynamo.reset(); fxfuse.reset_stats()
        out = fxfuse.compile(M(), only_profitable=False)(x, w)
        want = M()(x, w)
        rep = str(fxfuse.report())
        line = [l.strip() for l in rep.splitlines() if l.strip().startswith("mm")][0]
        d = int(((out != want) & ~(out.isnan() & want.isnan())).sum())
        print(f"{name:16s} diff {d:5d}  {line[:150]}")
