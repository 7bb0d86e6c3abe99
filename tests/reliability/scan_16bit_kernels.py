"""Where ATen's Half / BFloat16 CPU kernels differ from the Float kernel rounded once (BUG-6,
tests/reliability/DIFFERENTIAL.md session 12): every unary op of the spec, the ops with scalar
arguments and the binary ops, on specials and on normal and wide-range values. The CPU path
evaluates a chain as eager called it where such a difference exists (runtime/reference_eval.cpp,
callsAsEagerDid); this prints where that matters on this machine's CPU.

  python tests/reliability/scan_16bit_kernels.py
"""
import torch
import torch.nn.functional as F

SPECIALS = [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 1e-8, -1e-8, 65504.0, -65504.0,
            3e38, -3e38, 88.7, -88.7, 1e-40]
UNARY = {"neg": torch.neg, "abs": torch.abs, "reciprocal": torch.reciprocal, "sqrt": torch.sqrt,
         "rsqrt": torch.rsqrt, "exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "erf": torch.erf,
         "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos, "relu": torch.relu, "gelu": F.gelu,
         "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu, "hardswish": F.hardswish,
         "log1p": torch.log1p, "expm1": torch.expm1, "sign": torch.sign,
         "pow 0.5": lambda x: x ** 0.5, "pow -0.5": lambda x: x ** -0.5, "pow 3": lambda x: x ** 3,
         "pow -2": lambda x: x ** -2, "add 0.745867": lambda x: x + 0.745867,
         "sub 0.745867": lambda x: x - 0.745867, "mul 0.745867": lambda x: x * 0.745867,
         "div 0.745867": lambda x: x / 0.745867}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
          "minimum": torch.minimum, "pow": torch.pow}


def values(dt):
    r = torch.randn(2000) * 4
    wide = torch.randn(2000) * 2.0 ** torch.randint(-30, 30, (2000,)).float()
    return torch.cat([torch.tensor(SPECIALS), r, wide]).to(dt)


def differ(eager, upcast):
    return ~((eager == upcast) | (torch.isnan(eager) & torch.isnan(upcast)))


def main():
    torch.manual_seed(0)
    for dt in (torch.float16, torch.bfloat16):
        x = values(dt)
        y = values(dt)[torch.randperm(len(x))]
        cases = [(n, lambda f=f: (f(x), f(x.float()).to(dt))) for n, f in UNARY.items()]
        cases += [(n, lambda f=f: (f(x, y), f(x.float(), y.float()).to(dt))) for n, f in BINARY.items()]
        for name, run in cases:
            eager, upcast = run()
            bad = differ(eager, upcast)
            if bad.any():
                first = bad.nonzero().flatten()[:3].tolist()
                print(f"{str(dt).split('.')[-1]:>9} {name:>14}: {int(bad.sum())} of {len(x)} differ, "
                      f"e.g. x={[x[i].item() for i in first]} eager={[eager[i].item() for i in first]} "
                      f"fp32 copy={[upcast[i].item() for i in first]}")
    print("done")


if __name__ == "__main__":
    main()
