"""A layout view (t / permute / transpose / unsqueeze+expand) between the nibble unpack and the u8->bf16 conversion:
the unpack is not folded (missed fusion) and the report blames 'a conversion between dtypes the kernels do not
convert'. The same view placed after the conversion folds. Answers stay correct."""
from common import *
bf = torch.bfloat16
N, K = 32, 64

class M(torch.nn.Module):
    def __init__(self, where):
        super().__init__()
        self.where = where
        self.register_buffer("w", packed(N, K // 2)); self.register_buffer("s", scale(K, 1))
    def forward(self, x):
        q = torch.stack([self.w & 15, self.w >> 4], -1).view(N, K)      # [N, K], unpacked along k
        if self.where == "t_before_convert":
            W = (q.t().to(bf) - 8) * self.s                              # [K, N]
        elif self.where == "permute_before_convert":
            W = (q.permute(1, 0).to(bf) - 8) * self.s
        elif self.where == "unsqueeze_before_convert":
            return torch.bmm(x.unsqueeze(0), (q.t().unsqueeze(0).to(bf) - 8) * self.s)[0]
        else:  # t_after_convert
            W = (q.to(bf).t() - 8) * self.s
        return x @ W

if __name__ == '__main__':
    for where in ("t_after_convert", "t_before_convert", "permute_before_convert", "unsqueeze_before_convert"):
        check(where, M(where), (torch.randn(4, K).to(bf),), expect_fold=True, show_report=True, quiet=True)
    summary()
    