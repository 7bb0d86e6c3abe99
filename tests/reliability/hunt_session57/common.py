# shared helper for the hunt57 reproductions (CPU).  Run from /work/main with PYTHONPATH=python.
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse

def neq(a, b):
    an, bn = torch.isnan(a), torch.isnan(b)
    return (an != bn) | (~an & ~bn & (a != b))

def inputs(dtype, seed=1, extra=2):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 32, generator=g) * (10.0 ** torch.linspace(-3, 3, 64).unsqueeze(1)) / 5
    w = torch.randn(128, 32, generator=g)
    zs = [(torch.randn(64, 128, generator=g) * 3).to(dtype) for _ in range(extra)]
    return (x.to(dtype), w.to(dtype), *zs)

def check(name, fn, dtype, seed=1, default_too=True):
    class M(torch.nn.Module):
        def forward(self, x, w, a, b):
            return fn(x @ w.t(), a, b)
    m, args = M(), inputs(dtype, seed)
    eager = m(*args)
    y = args[0] @ args[1].t()
    torch._dynamo.reset(); fxfuse.reset_stats()
    ind = torch.compile(m)(*args)
    torch._dynamo.reset(); fxfuse.reset_stats()
    fx = fxfuse.compile(m, only_profitable=False)(*args)
    rep = str(fxfuse.report()).strip().splitlines()
    d, di = neq(fx, eager), neq(ind, eager)
    print(f"{name} {dtype}: fxfuse!=eager {int(d.sum())}/{d.numel()}, inductor!=eager {int(di.sum())}, "
          f"fxfuse wrong where inductor right {int((d & ~di).sum())}")
    if (d & ~di).any():
        i = tuple((d & ~di).nonzero()[0].tolist())
        print(f"   e.g. y={y[i].item()!r} a={args[2][i].item()!r} b={args[3][i].item()!r}: fxfuse={fx[i].item()!r} "
              f"eager={eager[i].item()!r} inductor={ind[i].item()!r}")
    print("   " + " | ".join(l.strip() for l in rep if "fused" in l))
    if default_too:
        torch._dynamo.reset(); fxfuse.reset_stats()
        fx2 = torch.compile(m, backend="fxfuse")(*args)
        print(f"   backend='fxfuse' (default options): chains_fused={fxfuse.stats()['chains_fused']}, "
              f"!=eager {int(neq(fx2, eager).sum())}")
    return int((d & ~di).sum())
