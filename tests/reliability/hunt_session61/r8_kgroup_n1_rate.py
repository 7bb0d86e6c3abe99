"""How often the N=1 group-wise (kgroup) rewrite differs from eager (plain bf16 weight with 4-bit values, and the
same folded from packed int4), per group size."""
from common import *
bf = torch.bfloat16
K = 128
class M(torch.nn.Module):
    def __init__(self, N, G, packed_w):
        super().__init__()
        self.N, self.G, self.pk = N, G, packed_w
        self.register_buffer("wp", packed(N, K // 2))
        self.register_buffer("W0", torch.stack([self.wp & 15, self.wp >> 4], -1).view(N, K).to(bf))
        self.register_buffer("s", scale(N, K // G))
    def forward(self, x):
        N, G = self.N, self.G
        W0 = torch.stack([self.wp & 15, self.wp >> 4], -1).view(N, K).to(bf) if self.pk else self.W0
        return F.linear(x, ((W0.view(N, K // G, G) - 8) * self.s[:, :, None]).view(N, K))
for N in (1, 2):
    for G in (2, 16, 32, 128):
        for pk in (False, True):
            bad = 0; tot = 0
            for seed in range(10):
                torch.manual_seed(seed)
                m = M(N, G, pk); x = torch.randn(6, K).to(bf)
                mod = fxfuse.rewrite(torch.export.export(m, (x,)), only_profitable=False).module()
                for _ in range(100):
                    xx = torch.randn(6, K).to(bf); tot += 1
                    bad += not torch.equal(mod(xx), m(xx))
            print(f"N={N} G={G:3d} packed={pk}: {bad}/{tot} calls differ", flush=True)
