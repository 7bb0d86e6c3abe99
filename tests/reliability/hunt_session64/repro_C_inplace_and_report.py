"""AutoGPTQ qlinear_cuda_old / GPTQ-for-LLaMa write the mask in place: `torch.bitwise_and(w, 15, out=w)` or `w &= 15`.
torch.export (no decompositions) keeps aten.bitwise_and.Scalar_out / aten.__iand__.Scalar. Result is right, but the
word unpack is not folded and the report blames the sub ("integer arithmetic that may wrap ... of masked values")
although the values are masked; for an in-place sub the report says "an in-place op". run_decompositions() folds it."""
import sys
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "..", "..", "python"))
import torch, fxfuse
from gptq_linear import GPTQLinear

class InPlaceMask(GPTQLinear):
    def weight(self):
        zeros = torch.bitwise_right_shift(torch.unsqueeze(self.qzeros, 2).expand(-1, -1, 8), self.wf.unsqueeze(0)).to(torch.int8)
        torch.bitwise_and(zeros, 15, out=zeros)
        zeros = zeros.reshape(self.scales.shape)
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1)).to(torch.int8)
        torch.bitwise_and(w, 15, out=w)          # or: w &= 15
        w = w.reshape(-1, self.N)
        g = self.g_idx.long()
        return self.scales[g] * (w - zeros[g])

torch.manual_seed(0)
m = InPlaceMask(256, 64, 64)
x = torch.randn(3, 256).half()
ep = torch.export.export(m, (x,))
print(fxfuse.report(ep))
print("equal:", torch.equal(fxfuse.rewrite(ep).module()(x), m(x)))
print("after run_decompositions:", fxfuse.report(ep.run_decompositions()).entries[0]["chain"])
