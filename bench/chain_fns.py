"""The chains as users write them, shared by the project's benchmark (bench_chains.py) and the
Hopper tools that need their specs (sm90/chain_specs.py). Each takes (x, w, b, r, wq, s, wt) and
uses what it needs: w is [K, N] (`x @ w`), wt the same weight as nn.Linear keeps it, [N, K]
contiguous (`F.linear`: the pass's `addmm` form, B K-major for the kernel)."""
import torch
import torch.nn.functional as F

CHAINS = {
    "bias_gelu": lambda x, w, b, r, wq, s, wt: F.gelu(torch.mm(x, w) + b, approximate="tanh"),
    "bias_gelu_resid": lambda x, w, b, r, wq, s, wt: F.gelu(torch.mm(x, w) + b, approximate="tanh") * 0.5 + r,
    "silu": lambda x, w, b, r, wq, s, wt: F.silu(torch.mm(x, w)),
    "bias_relu_cast": lambda x, w, b, r, wq, s, wt: torch.relu(torch.mm(x, w) + b).to(torch.float16),
    "linear_gelu": lambda x, w, b, r, wq, s, wt: F.gelu(F.linear(x, wt, b), approximate="tanh"),
    "linear_relu_cast": lambda x, w, b, r, wq, s, wt: torch.relu(F.linear(x, wt, b)).to(torch.float16),
    # a transformer block's down-projection and its residual: the residual form real models
    # have (the bias inside eager's cuBLAS call, then one add), unlike bias_gelu_resid's
    "linear_resid": lambda x, w, b, r, wq, s, wt: F.linear(x, wt, b) + r,
    # the activations with an ATen kernel of their own (pass/composite_activations.cpp; session 56): a Mamba
    # block's dt projection is `softplus(F.linear(dt, w, b))`
    "linear_softplus": lambda x, w, b, r, wq, s, wt: F.softplus(F.linear(x, wt, b)),
    "linear_mish": lambda x, w, b, r, wq, s, wt: F.mish(F.linear(x, wt, b)),
    "linear_elu": lambda x, w, b, r, wq, s, wt: F.elu(F.linear(x, wt, b)),
    "linear_hardsigmoid": lambda x, w, b, r, wq, s, wt: F.hardsigmoid(F.linear(x, wt, b)),
    "linear_logsigmoid": lambda x, w, b, r, wq, s, wt: F.logsigmoid(F.linear(x, wt, b)),
    "w8_bias": lambda x, w, b, r, wq, s, wt: torch.mm(x, wq.to(x.dtype) * s) + b,
    "w8_linear": lambda x, w, b, r, wq, s, wt: F.linear(x, wq.t().to(x.dtype) * s[:, None], b),
}


def chain_args(M, K, N, dt):
    """Fresh random inputs for every chain at M x K x N in dtype dt, in the order the chains take
    them: (x, w, b, r, wq, s, wt)."""
    x = torch.randn(M, K, device="cuda", dtype=dt)
    w = torch.randn(K, N, device="cuda", dtype=dt) / K ** 0.5
    b = torch.randn(N, device="cuda", dtype=dt)
    r = torch.randn(M, N, device="cuda", dtype=dt)
    wq = torch.randint(-127, 127, (K, N), device="cuda", dtype=torch.int8)
    s = torch.rand(N, device="cuda", dtype=dt) / 64
    return (x, w, b, r, wq, s, w.t().contiguous())


def float64_reference(fn, args):
    """The chain evaluated in float64 (integer inputs as they are)."""
    return fn(*[a.double() if a.is_floating_point() else a for a in args])

