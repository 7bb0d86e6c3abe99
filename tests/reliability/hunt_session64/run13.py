import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)

class U(torch.nn.Module):
    def __init__(self, kind, K=256, N=64, G=64, wf=None):
        super().__init__()
        self.K, self.N, self.G, self.kind = K, N, G, kind
        self.register_buffer("qweight", rand_int32(K // 8, N))
        self.register_buffer("z", torch.randint(0, 16, (K // G, N), dtype=torch.int8))
        self.register_buffer("scales", ((torch.rand(K // G, N) * 0.02 + 0.001)).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", wf if wf is not None else torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
    def forward(self, x):
        q, wf, K, N, k = self.qweight, self.wf, self.K, self.N, self.kind
        if k == "last_dim_reshape":   # [K/8, N, 8] -> reshape(K, N): NOT GPTQ's order
            w = (q.unsqueeze(-1) >> wf.view(1, 1, 8)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "last_dim_permute": # [K/8, N, 8] -> permute -> reshape: GPTQ's order
            w = (q.unsqueeze(-1) >> wf.view(1, 1, 8)).to(torch.int8) & 15
            w = w.permute(0, 2, 1).reshape(K, N)
        elif k == "planar":           # [8, K/8, N] -> reshape(K, N): k = j*K/8 + r
            w = (q.unsqueeze(0) >> wf.view(8, 1, 1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "flip_wf":
            w = (q.unsqueeze(1) >> wf.flip(-1).unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "slice_wf":         # wf buffer [1,16] of 0,2,..30 ; [:, ::2] -> 0,4,..,28
            w = (q.unsqueeze(1) >> wf[:, ::2].unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "slice_wf_odd":     # wf buffer [1,16] of 0,2,..30 ; [:, 1::2] -> 2,6,..,30
            w = (q.unsqueeze(1) >> wf[:, 1::2].unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "wf_plus0":
            w = (q.unsqueeze(1) >> (wf + 0).unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "wf_clone":
            w = (q.unsqueeze(1) >> wf.clone().unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "q_flip":           # qweight rows reversed
            w = (q.flip(0).unsqueeze(1) >> wf.unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "q_slice_cols":     # qweight [K/8, 2N] of which the first N columns
            w = (q[:, :N].unsqueeze(1) >> wf.unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "q_slice_cols2":    # second half columns
            w = (q[:, N:].unsqueeze(1) >> wf.unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "q_transposed":     # qweight stored [N, K/8]
            w = (q.t().unsqueeze(1) >> wf.unsqueeze(-1)).to(torch.int8) & 15
            w = w.reshape(K, N)
        elif k == "shift_left_then_right":  # signed nibbles: (q << (28 - s)) >> 28
            w = ((q.unsqueeze(1) << (28 - wf).unsqueeze(-1)) >> 28).to(torch.int8)
            w = w.reshape(K, N)
        elif k == "view_instead_of_reshape":
            w = (q.unsqueeze(1).expand(-1, 8, -1) >> wf.unsqueeze(-1)).to(torch.int8) & 15
            w = w.contiguous().view(K, N)
        elif k == "flatten":
            w = ((q.unsqueeze(1).expand(-1, 8, -1) >> wf.unsqueeze(-1)).to(torch.int8) & 15).flatten(0, 1)
        elif k == "mask_0xF_int32_then_uint8":
            w = ((q.unsqueeze(1) >> wf.unsqueeze(-1)) & 0xF).to(torch.uint8).reshape(K, N)
            g = self.g_idx.long()
            return x @ (self.scales[g] * (w.to(torch.int16) - (self.z & 15)[g])).half()
        elif k == "float_path":       # convert nibble to f16 then subtract float zeros
            w = ((q.unsqueeze(1) >> wf.unsqueeze(-1)) & 15).reshape(K, N).half()
            g = self.g_idx.long()
            return x @ (self.scales[g] * (w - self.z[g].half()))
        elif k == "bitwise_and_tensor":   # mask as a tensor
            w = ((q.unsqueeze(1) >> wf.unsqueeze(-1)).to(torch.int8) & torch.tensor(15, dtype=torch.int8)).reshape(K, N)
        elif k == "and_0x0F_int64":
            w = ((q.unsqueeze(1) >> wf.unsqueeze(-1)).long() & 15).reshape(K, N)
        elif k == "remainder16":      # % 16 instead of & 15
            w = ((q.unsqueeze(1) >> wf.unsqueeze(-1)) % 16).to(torch.int8).reshape(K, N)
        elif k == "logical_shift":    # unsigned shift via view(uint32)
            w = ((q.view(torch.uint32).unsqueeze(1) >> wf.view(torch.uint32).unsqueeze(-1)) & 15).to(torch.int8).reshape(K, N)
        g = self.g_idx.long()
        return x @ (self.scales[g] * (w - (self.z & 15)[g])).half()

for k in ["last_dim_reshape", "last_dim_permute", "planar", "flip_wf", "wf_plus0", "wf_clone", "q_flip",
          "shift_left_then_right", "view_instead_of_reshape", "flatten", "mask_0xF_int32_then_uint8", "float_path",
          "bitwise_and_tensor", "and_0x0F_int64", "remainder16", "logical_shift"]:
    check(k, U(k), X(3, 256), show_spec=k in ("last_dim_reshape", "planar", "flip_wf", "q_flip", "float_path"))
wf16 = torch.arange(0, 32, 2, dtype=torch.int32).unsqueeze(0)
check("slice_wf", U("slice_wf", wf=wf16), X(3, 256), show_spec=True)
check("slice_wf_odd", U("slice_wf_odd", wf=wf16), X(3, 256), show_spec=True)
m = U("q_slice_cols"); m.qweight = rand_int32(32, 128)
check("q_slice_cols", m, X(3, 256))
m = U("q_slice_cols2"); m.qweight = rand_int32(32, 128)
check("q_slice_cols2", m, X(3, 256), show_spec=True)
m = U("q_transposed"); m.qweight = rand_int32(64, 32)
check("q_transposed", m, X(3, 256), show_spec=True)
