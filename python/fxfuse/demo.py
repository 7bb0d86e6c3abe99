"""``python -m fxfuse.demo``: fxfuse on a GPT block, a Llama-style gated MLP, and that MLP with
int8 weights at decode size (8 tokens), with one scale per output channel and with GPTQ's scale per group of k, and
with packed int4 weights (two 4-bit values to a byte).

Each model is built here (no downloads), compiled with ``torch.compile(backend="fxfuse")``,
checked against eager (relative error, must pass), and its fusion report printed. On a GPU
it runs in bf16 and also times eager, ``torch.compile`` (default Inductor) and fxfuse; on
CPU it runs in float32 through the CPU reference kernel of ``fxfuse.gemm_chain`` (numbers
only, no timing: the CPU kernel is a reference, not a fast path).
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads

        def split(y):
            return y.view(b, t, h, d // h).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.o(y)


class GPTBlock(nn.Module):
    """Pre-LN transformer block: attention (q/k/v/o projections) and a GELU MLP."""

    def __init__(self, dim: int = 256, heads: int = 4):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GatedMLP(nn.Module):
    """Llama MLP: ``(silu(x @ w1) * (x @ w3)) @ w2``."""

    def __init__(self, dim: int = 256, hidden: int = 688):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Int8Linear(nn.Module):
    """Weight-only int8 linear layer (per-output-channel scales), as deployed for decode:
    ``x @ (w_i8 * scale[:, None]).T``. Eager PyTorch dequantizes the whole weight every call."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.register_buffer("w", torch.randint(-127, 128, (d_out, d_in), dtype=torch.int8))
        self.register_buffer("scale", (torch.rand(d_out) + 0.5) / (127 * d_in ** 0.5))

    def forward(self, x):
        return F.linear(x, self.w.to(x.dtype) * self.scale.to(x.dtype)[:, None])


class GroupInt8Linear(nn.Module):
    """Weight-only int8 linear layer with a scale per group of k (GPTQ's form; groups of 128 where the width allows):
    ``x @ (w_i8.view(N, K/G, G) * scale[:, :, None]).view(N, K).T``."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.group = next(g for g in (128, 64, 32, 16, 8, 4, 2, 1) if d_in % g == 0)
        self.register_buffer("w", torch.randint(-127, 128, (d_out, d_in), dtype=torch.int8))
        self.register_buffer("scale", (torch.rand(d_out, d_in // self.group) + 0.5) / (127 * d_in ** 0.5))

    def forward(self, x):
        n, k = self.w.shape
        w = self.w.view(n, k // self.group, self.group).to(x.dtype) * self.scale.to(x.dtype)[:, :, None]
        return F.linear(x, w.view(n, k))


class PackedInt4Linear(nn.Module):
    """Weight-only int4 linear layer: two 4-bit values of k to a byte (low nibble first, as int4 checkpoints store
    them), a scale per group of k: ``x @ ((unpack(w).view(N, K/G, G) - 8) * scale[:, :, None]).view(N, K).T``."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.group = next(g for g in (128, 64, 32, 16, 8, 4, 2) if d_in % g == 0)
        self.register_buffer("w", torch.randint(0, 256, (d_out, d_in // 2), dtype=torch.uint8))
        self.register_buffer("scale", (torch.rand(d_out, d_in // self.group) + 0.5) / (8 * d_in ** 0.5))

    def forward(self, x):
        n, k = self.w.shape[0], 2 * self.w.shape[1]
        q = torch.stack([self.w & 15, self.w >> 4], -1).view(n, k)
        w = (q.view(n, k // self.group, self.group).to(x.dtype) - 8) * self.scale.to(x.dtype)[:, :, None]
        return F.linear(x, w.view(n, k))


class Int8GatedMLP(nn.Module):
    """Llama MLP with quantized weights: ``w2(silu(w1(x)) * w3(x))``; `linear`: the layer (int8 with one scale per
    output channel or per group of k, or packed int4)."""

    def __init__(self, dim: int, hidden: int, linear: type = Int8Linear):
        super().__init__()
        self.w1, self.w3, self.w2 = linear(dim, hidden), linear(dim, hidden), linear(hidden, dim)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-12)).item()


def _times_ms(fns: dict, x) -> dict:
    """Median ms per call of each of fns (name -> model) on x, their calls interleaved
    (fxfuse.autotune.time_interleaved: a clock swing hits all of them alike), after a warm-up."""
    from fxfuse.autotune import time_interleaved

    calls = {name: (lambda f=f: f(x)) for name, f in fns.items()}
    time_interleaved(calls, 3)  # warm-up, not kept (compiles, caches)
    return {name: statistics.median(t) for name, t in time_interleaved(calls, 50).items()}


def run_case(name: str, model: nn.Module, x: torch.Tensor, tol: float, timing: bool, dump_dir: str | None) -> bool:
    import fxfuse

    torch._dynamo.reset()
    fxfuse.reset_stats()
    backend = fxfuse.backend_with(dump_dir=dump_dir) if dump_dir else "fxfuse"
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        ref = model(x)
        out = compiled(x)
        x2 = torch.randn_like(x)  # fresh input: the compiled code, not a cached result
        ref2, out2 = model(x2), compiled(x2)
    err = max(_rel_err(out, ref), _rel_err(out2, ref2))
    ok = err <= tol
    s = fxfuse.stats()
    print(f"\n=== {name}: input {tuple(x.shape)} {str(x.dtype).replace('torch.', '')} on {x.device}")
    print(str(fxfuse.report()).rstrip())
    print(f"chains fused: {s['chains_fused']} of {s['gemms_seen']} GEMMs; "
          f"rejections: {s['rejections'] or 'none'}; kernels compiled: {s.get('kernels_compiled', 0)}")
    print(f"relative error vs eager: {err:.3e} (tolerance {tol:.0e}) -> {'PASS' if ok else 'FAIL'}")
    if timing:
        with torch.no_grad():
            default = torch.compile(model)
            t = _times_ms({"eager": model, "default": default, "fxfuse": compiled}, x)
            t_eager, t_default, t_fx = t["eager"], t["default"], t["fxfuse"]
        print(f"time: eager {t_eager:.3f} ms | torch.compile {t_default:.3f} ms | fxfuse {t_fx:.3f} ms "
              f"({t_default / t_fx:.2f}x vs torch.compile, {t_eager / t_fx:.2f}x vs eager)")
    return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fxfuse.demo", description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dim", type=int, default=None, help="model width (default: 1024 on GPU, 128 on CPU)")
    p.add_argument("--tokens", type=int, default=None, help="batch*sequence tokens (default: 4096 GPU, 64 CPU)")
    p.add_argument("--dump", default=None, metavar="DIR", help="write fxfuse dump folders")
    p.add_argument("--no-timing", action="store_true")
    args = p.parse_args(argv)

    import fxfuse  # noqa: F401 - registers backend="fxfuse"

    gpu = args.device.startswith("cuda")
    dtype = torch.bfloat16 if gpu else torch.float32
    dim = args.dim or (1024 if gpu else 128)
    tokens = args.tokens or (4096 if gpu else 64)
    batch, seq = max(1, tokens // 256), min(tokens, 256)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    if not gpu:
        print("fxfuse demo on CPU: float32, the fused op runs its CPU reference kernel "
              "(correctness only; no timing). Run on a CUDA GPU for bf16 kernels and timings.")
    torch.manual_seed(0)
    ok = True
    # Decode: a few tokens against a Llama-7B-sized int8 MLP on the GPU (small on CPU).
    dec_dim = 4096 if gpu and args.dim is None else dim
    dec_hidden = 11008 if gpu and args.dim is None else (8 * dim // 3 + 63) // 64 * 64
    cases = [
        ("GPT block (attention q/k/v/o + GELU MLP, LayerNorm, residuals)",
         GPTBlock(dim, heads=max(1, dim // 64)), torch.randn(batch, seq, dim)),
        ("Llama gated MLP (silu(x@w1) * (x@w3)) @ w2",
         GatedMLP(dim, hidden=(8 * dim // 3 + 63) // 64 * 64), torch.randn(batch * seq, dim)),
        ("Llama gated MLP, int8 weight-only, decode (8 tokens)",
         Int8GatedMLP(dec_dim, dec_hidden), torch.randn(8, dec_dim)),
        ("Llama gated MLP, packed int4 (two per byte, a scale per group of k), decode (8 tokens)",
         Int8GatedMLP(dec_dim, dec_hidden, PackedInt4Linear), torch.randn(8, dec_dim)),
        ("Llama gated MLP, GPTQ int8 (a scale per group of k), decode (8 tokens)",
         Int8GatedMLP(dec_dim, dec_hidden, GroupInt8Linear), torch.randn(8, dec_dim)),
    ]
    for name, model, x in cases:
        model = model.to(args.device, dtype).eval()
        ok &= run_case(name, model, x.to(args.device, dtype), tol, gpu and not args.no_timing, args.dump)
    print("\nall results match eager" if ok else "\nMISMATCH: fxfuse results differ from eager", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
