import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
import torch.nn.functional as F
torch.manual_seed(0)
f16 = torch.float16
i8, i16, i32, i64 = torch.int8, torch.int16, torch.int32, torch.int64
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)

class Sym(Q):
    """symmetric GPTQ: no qzeros, w - 8"""
    def __init__(self, *a, form2="i8sub", **k):
        super().__init__(*a, **k); self.form2 = form2
    def weight(self):
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        if self.form2 == "nomask":
            w = w.to(torch.int8)
        elif self.form2 == "mask_after_reshape":
            w = w.to(torch.int8).reshape(-1, self.N) & 15
        elif self.form2 == "i32_mask_no_conv":
            w = w & 15
        else:
            w = torch.bitwise_and(w.to(torch.int8), 15)
        w = w.reshape(-1, self.N)
        g = self.g_idx.long()
        if self.form2 in ("i8sub", "nomask", "mask_after_reshape", "i32_mask_no_conv"):
            return self.scales[g] * (w - 8)
        if self.form2 == "f16sub":
            return self.scales[g] * (w.to(self.scales.dtype) - 8)
        if self.form2 == "rsub":
            return self.scales[g] * (8 - w)
        if self.form2 == "sub_big":
            return self.scales[g] * (w - 200)
        if self.form2 == "add_big_i8":
            return self.scales[g] * (w + 120)
        if self.form2 == "mul_i8":
            return self.scales[g] * (w * 16)
        if self.form2 == "neg":
            return self.scales[g] * (-w)
        if self.form2 == "no_scale":
            return (w - 8).to(self.scales.dtype)
        if self.form2 == "sub_twice":
            return self.scales[g] * (w - w.flip(0))
        if self.form2 == "w_minus_z_big":
            z = torch.full_like(self.scales, 3, dtype=torch.int8)
            return self.scales[g] * (w - z[g] - 120 - 20)
for f in ["i8sub", "nomask", "mask_after_reshape", "i32_mask_no_conv", "f16sub", "rsub", "sub_big", "add_big_i8",
          "mul_i8", "neg", "no_scale", "sub_twice", "w_minus_z_big"]:
    check(f"sym {f}", Sym(256, 64, 64, form2=f), X(3, 256), show_spec=f in ("nomask", "add_big_i8", "w_minus_z_big", "mul_i8"))
