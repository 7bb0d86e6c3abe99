"""Packed values in other roles: A operand (activation), epilogue residual, unpacked along n, per-nibble converts."""
from common import *
from torch.export import Dim
bf = torch.bfloat16
N, K, M = 32, 64, 8

def unpack(w, dim):
    shape = list(w.shape); shape[dim] *= 2
    return torch.stack([w & 15, w >> 4], dim + 1).view(shape)

class AOp(torch.nn.Module):
    """activation packed along k"""
    def __init__(self):
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(N, K).to(bf))
    def forward(self, xp):
        return F.linear((unpack(xp, 1).to(bf) - 8) * 0.5, self.W)
class AOp3(AOp):
    def forward(self, xp):
        return F.linear(unpack(xp, 2).to(bf), self.W)
class BothPacked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", packed(N, K // 2)); self.register_buffer("s", scale(N, 1))
    def forward(self, xp):
        return F.linear(unpack(xp, 1).to(bf), (unpack(self.w, 1).to(bf) - 8) * self.s)
class Resid(torch.nn.Module):
    """epilogue: + unpacked residual along n"""
    def __init__(self):
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(N, K).to(bf))
        self.register_buffer("r", packed(M, N // 2))
    def forward(self, x):
        return F.linear(x, self.W) + unpack(self.r, 1).to(bf)
class AlongN(torch.nn.Module):
    """weight packed along n: [N/2, K] -> [N, K] (must not fold)"""
    def __init__(self, layout):
        super().__init__()
        self.layout = layout
        self.register_buffer("w", packed(N // 2, K) if layout == "linear" else packed(K, N // 2))
        self.register_buffer("s", scale(N, 1) if layout == "linear" else scale(N))
    def forward(self, x):
        if self.layout == "linear":
            return F.linear(x, (unpack(self.w, 0).to(bf) - 8) * self.s)
        return x @ ((unpack(self.w, 1).to(bf) - 8) * self.s)
class Backward(torch.nn.Module):
    """the backward of a linear: g @ W with W [N, K] unpacked along K (= the GEMM's n)"""
    def __init__(self):
        super().__init__()
        self.register_buffer("w", packed(N, K // 2)); self.register_buffer("s", scale(N, 1))
    def forward(self, g):
        return g @ ((unpack(self.w, 1).to(bf) - 8) * self.s)
class PerNibbleConvert(torch.nn.Module):
    def __init__(self, v):
        super().__init__()
        self.v = v
        self.register_buffer("w", packed(N, K // 2)); self.register_buffer("s", scale(N, 1))
    def forward(self, x):
        w = self.w
        if self.v == "convert_then_view":
            q = torch.stack([w & 15, w >> 4], -1).to(bf).view(N, K)
        elif self.v == "convert_each":
            q = torch.stack([(w & 15).to(bf), (w >> 4).to(bf)], -1).view(N, K)
        elif self.v == "clone_halves":
            q = torch.stack([(w & 15).clone(), (w >> 4).clone()], -1).view(N, K).to(bf)
        return F.linear(x, (q - 8) * self.s)

if __name__ == '__main__':
    check("A packed [M,K/2]", AOp(), (packed(M, K // 2),), fresh=[(packed(M, K // 2),)])
    check("A packed symbolic M", AOp(), (packed(M, K // 2),), dynamic_shapes={"xp": {0: Dim("M", min=2, max=100)}},
          fresh=[(packed(37, K // 2),)])
    check("A packed 3d [B,S,K/2]", AOp3(), (packed(2, 3, K // 2),))
    check("A packed 3d symbolic", AOp3(), (packed(2, 3, K // 2),), dynamic_shapes={"xp": {0: Dim("B", min=2, max=100), 1: Dim("S", min=2, max=100)}},
          fresh=[(packed(5, 7, K // 2),)])
    check("A and B packed", BothPacked(), (packed(M, K // 2),), fresh=[(packed(M, K // 2),)])
    check("epilogue residual packed along n", Resid(), (torch.randn(M, K).to(bf),))
    for layout in ("linear", "matmul"):
        check(f"weight packed along n {layout}", AlongN(layout), (torch.randn(M, K).to(bf),), expect_fold=False)
    check("backward-like g @ W (unpack along GEMM n)", Backward(), (torch.randn(M, N).to(bf),), expect_fold=False)
    for v in ("convert_then_view", "convert_each", "clone_halves"):
        check(f"per-nibble {v}", PerNibbleConvert(v), (torch.randn(M, K).to(bf),), expect_fold=False, show_report=True)
    summary()
    