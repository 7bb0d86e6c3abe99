"""Unpack spellings: must-fold vs must-not-fold, every answer must equal eager."""
from common import *
bf = torch.bfloat16
N, K = 32, 64

def q_of(w, form):
    n, kh = w.shape
    if form == "stack_pos": return torch.stack([w & 15, w >> 4], 2).view(n, 2 * kh)
    if form == "stack_neg": return torch.stack([w & 15, w >> 4], -1).view(n, 2 * kh)
    if form == "stack_reshape": return torch.stack([w & 15, w >> 4], -1).reshape(n, 2 * kh)
    if form == "stack_flatten": return torch.stack([w & 15, w >> 4], -1).flatten(1)
    if form == "stack_view_-1": return torch.stack([w & 15, w >> 4], -1).view(n, -1)
    if form == "cat_unsq_neg": return torch.cat([(w & 15).unsqueeze(-1), (w >> 4).unsqueeze(-1)], -1).view(n, 2 * kh)
    if form == "cat_unsq_mixed": return torch.cat([(w & 15).unsqueeze(2), (w >> 4).unsqueeze(-1)], 2).view(n, 2 * kh)
    if form == "hi_masked_u8": return torch.stack([w & 15, (w >> 4) & 15], -1).view(n, 2 * kh)
    if form == "bitwise_and_fn": return torch.stack([torch.bitwise_and(w, 15), torch.bitwise_right_shift(w, 4)], -1).view(n, 2 * kh)
    # must not fold (other functions)
    if form == "mod16": return torch.stack([w % 16, w // 16], -1).view(n, 2 * kh)
    if form == "mod16_shift": return torch.stack([w % 16, w >> 4], -1).view(n, 2 * kh)
    if form == "and15_div16": return torch.stack([w & 15, w // 16], -1).view(n, 2 * kh)
    if form == "high_first": return torch.stack([w >> 4, w & 15], -1).view(n, 2 * kh)
    if form == "halves": return torch.cat([w & 15, w >> 4], 1)
    if form == "halves_stack_dim1": return torch.stack([w & 15, w >> 4], 1).view(n, 2 * kh)
    if form == "stack_dim0": return torch.stack([w & 15, w >> 4], 0).view(2 * n, kh).view(n, 2 * kh)
    if form == "mask_14": return torch.stack([w & 14, w >> 4], -1).view(n, 2 * kh)
    if form == "mask_31": return torch.stack([w & 31, w >> 4], -1).view(n, 2 * kh)
    if form == "shift_5": return torch.stack([w & 15, w >> 5], -1).view(n, 2 * kh)
    if form == "lshift": return torch.stack([w & 15, (w << 4) & 15], -1).view(n, 2 * kh)
    if form == "hi_mask_7": return torch.stack([w & 15, (w >> 4) & 7], -1).view(n, 2 * kh)
    if form == "lo_no_mask": return torch.stack([w, w >> 4], -1).view(n, 2 * kh)
    if form == "lo_or": return torch.stack([w | 15, w >> 4], -1).view(n, 2 * kh)
    if form == "xor": return torch.stack([w ^ 15, w >> 4], -1).view(n, 2 * kh)
    if form == "lo_lo": return torch.stack([w & 15, w & 15], -1).view(n, 2 * kh)
    if form == "hi_hi": return torch.stack([w >> 4, w >> 4], -1).view(n, 2 * kh)
    if form == "three_way": return torch.stack([w & 15, w >> 4, w & 15], -1)[..., :2].reshape(n, 2 * kh)
    if form == "and_shift_order": return torch.stack([(w >> 4) & 15, w & 15], -1).view(n, 2 * kh)
    if form == "and_then_shift": return torch.stack([w & 15, (w & 0xF0) >> 4], -1).view(n, 2 * kh)
    if form == "tensor_mask": return torch.stack([w & torch.tensor(15, dtype=torch.uint8), w >> 4], -1).view(n, 2 * kh)
    if form == "transpose_stack": return torch.stack([w & 15, w >> 4], 1).transpose(1, 2).reshape(n, 2 * kh)  # == interleave
    if form == "stack_of_transposed": return torch.stack([(w & 15).t(), (w >> 4).t()], 1).view(2 * kh, n).t()  # interleave along k, matmul layout
    raise KeyError(form)

class M(torch.nn.Module):
    def __init__(self, form, raw=torch.uint8, hi_mask=False):
        super().__init__()
        self.form = form
        self.register_buffer("w", packed(N, K // 2, dtype=raw))
        self.register_buffer("s", scale(N, 1))
    def forward(self, x):
        q = q_of(self.w, self.form)
        return torch.relu(F.linear(x, (q.to(bf) - 8) * self.s))

FOLD = ["stack_pos", "stack_neg", "stack_reshape", "stack_flatten", "stack_view_-1", "cat_unsq_neg", "cat_unsq_mixed",
        "hi_masked_u8", "bitwise_and_fn"]
NOFOLD = ["mod16", "mod16_shift", "and15_div16", "high_first", "halves", "halves_stack_dim1", "stack_dim0", "mask_14",
          "mask_31", "shift_5", "lshift", "hi_mask_7", "lo_no_mask", "lo_or", "xor", "lo_lo", "hi_hi", "three_way",
          "and_shift_order", "and_then_shift", "tensor_mask"]
EITHER = ["transpose_stack", "stack_of_transposed"]
if __name__ == "__main__":
  for f in FOLD + NOFOLD + EITHER:
    for dec in (False, True):
        m = M(f)
        x = torch.randn(4, K).to(bf)
        check(f"form {f} dec={dec}", m, (x,), fresh=[(torch.randn(4, K).to(bf),)], decompose=dec,
              expect_fold=True if f in FOLD else False if f in NOFOLD else None, quiet=True)

# signed/other containers
class C(torch.nn.Module):
    def __init__(self, raw, hi_mask):
        super().__init__()
        self.hi_mask = hi_mask
        self.register_buffer("w", packed(N, K // 2, dtype=raw))
        self.register_buffer("s", scale(N, 1))
    def forward(self, x):
        w = self.w
        hi = (w >> 4) & 15 if self.hi_mask else w >> 4
        q = torch.stack([w & 15, hi], -1).view(N, K)
        return F.linear(x, (q.to(bf) - 8) * self.s)
if __name__ == '__main__':
    for raw in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        for hm in (False, True):
            exp = raw == torch.uint8 or (raw == torch.int8 and hm)
            for dec in (False, True):
                check(f"container {raw} hi_mask={hm} dec={dec}", C(raw, hm), (torch.randn(4, K).to(bf),), decompose=dec,
                      expect_fold=exp if raw != torch.int8 or hm else False, quiet=True)
    # int16 with values beyond 255 (not a byte)
class C16(C):
    def __init__(self):
        super().__init__(torch.int16, True)
        self.w = torch.randint(-32768, 32767, (N, K // 2), dtype=torch.int16)
if __name__ == '__main__':
    check("int16 wide values", C16(), (torch.randn(4, K).to(bf),), expect_fold=False, quiet=True)
    summary()
    