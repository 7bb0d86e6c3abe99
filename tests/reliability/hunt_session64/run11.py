import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
import torch.nn.functional as F
torch.manual_seed(0)
f16 = torch.float16
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)

class Base(torch.nn.Module):
    def __init__(self, K, N, G, gK=None, slen=None):
        super().__init__()
        self.K, self.N, self.G = K, N, G
        self.register_buffer("qweight", rand_int32(K // 8, N))
        self.register_buffer("qzeros", rand_int32(-(-K // G), N // 8))
        self.register_buffer("scales", ((torch.rand(-(-K // G), slen or N) * 0.02 + 0.001)).half())
        self.register_buffer("g_idx", torch.arange(gK or K, dtype=torch.int32) // G)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
    def w(self):
        w = torch.bitwise_right_shift(self.qweight.unsqueeze(1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        return (w.to(torch.int8) & 15).reshape(self.K, self.N)
    def z(self):
        z = torch.bitwise_right_shift(self.qzeros.unsqueeze(2).expand(-1, -1, 8), self.wf.unsqueeze(0))
        return (z.to(torch.int8) & 15).reshape(self.qzeros.shape[0], -1)

class Variant(Base):
    def __init__(self, kind, K=256, N=64, G=64, **kw):
        super().__init__(K, N, G, **kw); self.kind = kind
    def forward(self, x):
        w, z, k = self.w(), self.z(), self.kind
        if k == "second_half":      # g_idx buffer of 2K, use second half
            g = self.g_idx[self.K:].long() - self.K // self.G * 0
            g = g - (self.K // self.G)   # re-base: eager values = arange(K)//G
            return x @ (self.scales[g] * (w - z[g])).half()
        if k == "second_half_raw":  # g_idx[K:] - K/G computed, but scales indexed w/o rebase -> needs 2x groups
            g = self.g_idx[self.K:].long()
            return x @ (self.scales[g] * (w - z[g])).half()
        if k == "first_half":
            g = self.g_idx[: self.K].long()
            return x @ (self.scales[g] * (w - z[g])).half()
        if k == "stride2":
            g = self.g_idx[::2].long()
            return x @ (self.scales[g] * (w - z[g])).half()
        if k == "flip":
            g = self.g_idx.flip(0).long()
            return x @ (self.scales[g] * (w - z[g])).half()
        if k == "plus1":
            g = self.g_idx.long() + 1
            return x @ (self.scales[g % (self.K // self.G)] * (w - z[g % (self.K // self.G)])).half()
        if k == "n_group":          # K == N: the group gather applies along n after a transpose
            s = self.scales[self.g_idx.long()].t()   # [slen, K] -> here [K, K]^T
            return x @ (s * (w - z[self.g_idx.long()])).half()
        if k == "transpose_A":      # weight as the A operand
            W = (self.scales[self.g_idx.long()] * (w - z[self.g_idx.long()])).half()
            return (W.t() @ x.t()).t()
        if k == "einsum":
            W = (self.scales[self.g_idx.long()] * (w - z[self.g_idx.long()])).half()
            return torch.einsum("mk,kn->mn", x, W)
        if k == "addmm":
            W = (self.scales[self.g_idx.long()] * (w - z[self.g_idx.long()])).half()
            return torch.addmm(torch.ones(self.N, dtype=x.dtype), x, W)
        if k == "two_gemms":
            W = (self.scales[self.g_idx.long()] * (w - z[self.g_idx.long()])).half()
            return x @ W, (x * 2) @ W
        if k == "index_select":
            g = self.g_idx.long()
            return x @ (self.scales.index_select(0, g) * (w - z.index_select(0, g))).half()
        if k == "gather_rows_via_take":
            g = self.g_idx.long()
            return x @ (self.scales[g, :] * (w - z[g, :])).half()
        if k == "idx_with_None":
            g = self.g_idx.long()
            return x @ (self.scales[g][:, :] * (w - z[(g,)])).half()
        if k == "g_idx_unsq":      # scales[g_idx[:, None], arange(N)] (2-D advanced index)
            g = self.g_idx.long()
            n = torch.arange(self.N)
            return x @ (self.scales[g[:, None], n[None, :]] * (w - z[g])).half()
        if k == "g_idx_cols":      # 2-D advanced index that permutes columns
            g = self.g_idx.long()
            n = torch.arange(self.N).flip(0)
            return x @ (self.scales[g[:, None], n[None, :]] * (w - z[g])).half()
        if k == "zeros_other_g":   # zeros indexed with a different (flipped) g
            g = self.g_idx.long()
            return x @ (self.scales[g] * (w - z[g.flip(0)])).half()
        if k == "scales_transposed_storage":  # scales stored [N, K/G]: scales.t()[g]
            g = self.g_idx.long()
            return x @ (self.st.t()[g] * (w - z[g])).half()
        if k == "w_transposed_twice":
            g = self.g_idx.long()
            return x @ (self.scales[g] * (w.t().contiguous().t() - z[g])).half()

tests = ["first_half", "second_half", "second_half_raw", "stride2", "flip", "plus1", "transpose_A", "einsum", "addmm",
         "two_gemms", "index_select", "gather_rows_via_take", "idx_with_None", "g_idx_unsq", "g_idx_cols",
         "zeros_other_g", "w_transposed_twice"]
for t in tests:
    kw = {}
    if t in ("first_half", "second_half", "stride2"): kw = dict(gK=512)
    if t == "second_half_raw": kw = dict(gK=512)
    try:
        m = Variant(t, **kw)
        if t == "second_half_raw":
            m.scales = torch.cat([m.scales, m.scales * 2]); m.qzeros = torch.cat([m.qzeros, m.qzeros.flip(0)])
        check(t, m, X(3, 256), show_spec=t in ("stride2", "second_half", "g_idx_cols"))
    except Exception as e:
        print("SETUP-FAIL", t, e)
m = Variant("n_group", K=256, N=256, G=64, slen=256)
check("n_group (K==N, gather then .t())", m, X(3, 256), show_spec=True)
m = Variant("scales_transposed_storage")
m.register_buffer("st", m.scales.t().contiguous())
check("scales stored [N,K/G] .t()[g]", m, X(3, 256))
