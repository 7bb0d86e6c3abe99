"""The same GPTQ layer inside a torch.cond branch: the word unpack and the g_idx fold are not done (the branch's
placeholders get no known values: program_known_values binds top-level placeholders only); results are right, but
the report says the unpack is "in a form the chain does not read (... where those shifts are known: an arange in the
graph, or a buffer of an exported program ...)" -- the shifts *are* a buffer of the exported program."""
import sys
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "..", "..", "python"))
import torch, fxfuse
from gptq_linear import GPTQLinear

class Cond(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = GPTQLinear(256, 64, 64); self.b = GPTQLinear(256, 64, 64)
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x), (x,))

torch.manual_seed(0)
m = Cond()
x = torch.randn(3, 256).half()
ep = torch.export.export(m, (x,))
print(fxfuse.report(ep))
top = torch.export.export(m.a, (x,))
print("same layer at top level:", fxfuse.report(top).entries[0]["chain"])
mod = fxfuse.rewrite(ep).module()
print("equal:", all(torch.equal(mod(s * x.abs()), m(s * x.abs())) for s in (1, -1)))
