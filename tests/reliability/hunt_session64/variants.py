import torch, torch.nn.functional as F

class Q(torch.nn.Module):
    """Configurable GPTQ-style dequant linear."""
    def __init__(self, K, N, G, bits=4, sdtype=torch.float16, xdtype=None, dq=torch.int8, and_first=False,
                 zmode="new", zdq=None, gidx_dtype=torch.int32, act_order=False, bias=False, wf_mode="nonpersistent",
                 form="matmul", group="gidx", out_cast=True, seed=0, wf_values=None, mask=None):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.K, self.N, self.G, self.bits = K, N, G, bits
        self.pf = 32 // bits
        self.dq, self.zdq = dq, (zdq if zdq is not None else dq)
        self.and_first, self.zmode, self.form, self.group, self.out_cast = and_first, zmode, form, group, out_cast
        self.mask = mask if mask is not None else (2 ** bits - 1)
        ng = -(-K // G)
        self.register_buffer("qweight", torch.randint(-2**31, 2**31 - 1, (K // self.pf, N), dtype=torch.int32, generator=g))
        self.register_buffer("qzeros", torch.randint(-2**31, 2**31 - 1, (ng, N // self.pf), dtype=torch.int32, generator=g))
        s = (torch.rand(ng, N, generator=g) * 0.02 + 0.001) * torch.where(torch.rand(ng, N, generator=g) < 0.5, -1, 1)
        self.register_buffer("scales", s.to(sdtype))
        gi = torch.arange(K, dtype=torch.int64) // G
        if act_order:
            gi = gi[torch.randperm(K, generator=g)]
        self.register_buffer("g_idx", gi.to(gidx_dtype))
        wf = torch.tensor(wf_values if wf_values is not None else list(range(0, 32, bits)), dtype=torch.int32).unsqueeze(0)
        self.wf_mode = wf_mode
        if wf_mode == "persistent":
            self.register_buffer("wf", wf)
        elif wf_mode == "nonpersistent":
            self.register_buffer("wf", wf, persistent=False)
        elif wf_mode == "attr":
            self.wf = wf
        self.bias = torch.nn.Parameter(torch.randn(N, generator=g).to(xdtype or sdtype)) if bias else None
        self.xdtype = xdtype

    def _wf(self):
        if self.wf_mode == "arange":
            return torch.arange(0, 32, self.bits, dtype=torch.int32, device=self.qweight.device).unsqueeze(0)
        return self.wf

    def _unpack(self, t, dim, dq):
        wf = self._wf()
        if dim == 1:
            sh = torch.bitwise_right_shift(torch.unsqueeze(t, 1).expand(-1, self.pf, -1), wf.unsqueeze(-1))
        else:
            sh = torch.bitwise_right_shift(torch.unsqueeze(t, 2).expand(-1, -1, self.pf), wf.unsqueeze(0))
        if self.and_first:
            sh = torch.bitwise_and(sh, self.mask)
            if dq is not None:
                sh = sh.to(dq)
        else:
            if dq is not None:
                sh = sh.to(dq)
            if self.zmode == "old_plus1_before_and" and dim == 2:
                sh = sh + 1
            sh = torch.bitwise_and(sh, self.mask)
        return sh

    def weight(self):
        z = self._unpack(self.qzeros, 2, self.zdq)
        w = self._unpack(self.qweight, 1, self.dq)
        if self.group == "gidx":
            z = z.reshape(self.scales.shape)
            w = w.reshape(w.shape[0] * w.shape[1], w.shape[2])
            gl = self.g_idx.long()
            zz = z[gl]
            if self.zmode == "old_plus1_after_and":
                W = self.scales[gl] * (w - (zz + 1))
            else:
                W = self.scales[gl] * (w - zz)
        elif self.group == "gidx_noLong":
            z = z.reshape(self.scales.shape)
            w = w.reshape(w.shape[0] * w.shape[1], w.shape[2])
            gl = self.g_idx
            W = self.scales[gl] * (w - z[gl])
        elif self.group == "view":  # AutoGPTQ cuda_old: reshape weight to groups
            z = z.reshape(-1, 1, z.shape[1] * z.shape[2])
            sc = self.scales.reshape(-1, 1, self.scales.shape[-1])
            w = w.reshape(-1, self.G, w.shape[2])
            if self.zmode == "old_plus1_after_and":
                W = sc * (w - (z + 1))
            else:
                W = sc * (w - z)
            W = W.reshape(W.shape[0] * W.shape[1], W.shape[2])
        elif self.group == "repeat":
            z = z.reshape(self.scales.shape)
            w = w.reshape(w.shape[0] * w.shape[1], w.shape[2])
            W = torch.repeat_interleave(self.scales, self.G, 0) * (w - torch.repeat_interleave(z, self.G, 0))
        return W

    def forward(self, x):
        W = self.weight()
        if self.out_cast:
            W = W.to(x.dtype)
        if self.form == "matmul":
            y = torch.matmul(x, W)
        elif self.form == "linear":
            y = F.linear(x, W.t(), self.bias)
            return y
        elif self.form == "reshape2d":
            shp = x.shape[:-1] + (self.N,)
            y = torch.matmul(x.reshape(-1, x.shape[-1]), W).reshape(shp)
        elif self.form == "at":
            y = x @ W
        return y + self.bias if self.bias is not None else y
