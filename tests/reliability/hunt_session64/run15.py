import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)

class Sh(torch.nn.Module):
    def __init__(self, kind, K=256, N=64, G=64):
        super().__init__()
        self.K, self.N, self.G, self.kind = K, N, G, kind
        for i in range(2):
            self.register_buffer(f"q{i}", rand_int32(K // 8, N))
            self.register_buffer(f"z{i}", torch.randint(-128, 128, (K // G, N), dtype=torch.int8))
            self.register_buffer(f"s{i}", (torch.rand(K // G, N) * 0.02 + 0.001).half())
        self.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        self.register_buffer("wf", torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0), persistent=False)
    def deq(self, q, z, s, sh, g):
        w = (torch.bitwise_right_shift(q.unsqueeze(1).expand(-1, 8, -1), sh).to(torch.int8) & 15).reshape(self.K, self.N)
        return (s[g] * (w - (z & 15)[g])).half()
    def forward(self, x):
        k = self.kind
        sh = self.wf.unsqueeze(-1)
        g = self.g_idx.long()
        if k == "shared_view":
            return x @ self.deq(self.q0, self.z0, self.s0, sh, g), torch.relu(x) @ self.deq(self.q1, self.z1, self.s1, sh, g)
        if k == "shared_view_chain":
            y = x @ self.deq(self.q0, self.z0, self.s0, sh, g)
            return torch.relu(y[:, :64].repeat(1, 4)) @ self.deq(self.q1, self.z1, self.s1, sh, g)
        if k == "view_also_output":
            return x @ self.deq(self.q0, self.z0, self.s0, sh, g), sh * 2
        if k == "nibbles_also_output":
            w = (torch.bitwise_right_shift(self.q0.unsqueeze(1).expand(-1, 8, -1), sh).to(torch.int8) & 15)
            wr = w.reshape(self.K, self.N)
            return x @ (self.s0[g] * (wr - (self.z0 & 15)[g])).half(), w
        if k == "shift_also_output":
            t = torch.bitwise_right_shift(self.q0.unsqueeze(1).expand(-1, 8, -1), sh)
            wr = (t.to(torch.int8) & 15).reshape(self.K, self.N)
            return x @ (self.s0[g] * (wr - (self.z0 & 15)[g])).half(), t.sum()
        if k == "reshaped_nibbles_also_used":
            wr = (torch.bitwise_right_shift(self.q0.unsqueeze(1).expand(-1, 8, -1), sh).to(torch.int8) & 15).reshape(self.K, self.N)
            return x @ (self.s0[g] * (wr - (self.z0 & 15)[g])).half(), wr.float().mean()
        if k == "g_long_shared":
            return x @ self.deq(self.q0, self.z0, self.s0, sh, g), g.sum()
        if k == "same_q_twice_diff_scales":
            return x @ self.deq(self.q0, self.z0, self.s0, sh, g) + x @ self.deq(self.q0, self.z1, self.s1, sh, g)
        if k == "gidx_output":
            return x @ self.deq(self.q0, self.z0, self.s0, sh, g), self.g_idx
        if k == "wf_output":
            return x @ self.deq(self.q0, self.z0, self.s0, sh, g), self.wf
for k in ["shared_view", "shared_view_chain", "view_also_output", "nibbles_also_output", "shift_also_output",
          "reshaped_nibbles_also_used", "g_long_shared", "same_q_twice_diff_scales", "gidx_output", "wf_output"]:
    r = check(k, Sh(k), X(3, 256))
