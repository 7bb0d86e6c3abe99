"""The unpack reshaped straight into k's groups: stack([w & 15, w >> 4], -1).view(N, K // G, G) (no [N, K] in
between), a natural spelling of a group-wise int4 dequantization. Not folded (missed fusion; the weight stays a
bf16 [N, K] tensor computed outside), and the report says the unpack is 'in a form the chain does not read (it reads
... `w & 15` and `(w >> 4)` ...)' although it is exactly that form. With .view(N, K).view(N, K // G, G) it folds.
Answers stay correct."""
from common import *
bf = torch.bfloat16
N, K, G = 64, 128, 32
class M(torch.nn.Module):
    def __init__(self, straight):
        super().__init__()
        self.straight = straight
        self.register_buffer("w", packed(N, K // 2)); self.register_buffer("s", scale(N, K // G))
    def forward(self, x):
        st = torch.stack([self.w & 15, self.w >> 4], -1)                    # [N, K/2, 2]
        q = st.view(N, K // G, G) if self.straight else st.view(N, K).view(N, K // G, G)
        return F.linear(x, ((q.to(bf) - 8) * self.s[:, :, None]).view(N, K))
for straight in (False, True):
    check(f"straight_into_groups={straight}", M(straight), (torch.randn(4, K).to(bf),), expect_fold=True,
          show_report=True, quiet=True)
summary()
