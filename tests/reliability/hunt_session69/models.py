import torch, torch.nn.functional as F

def mk_layout(layout, B, R, K, dtype):
    if layout == "contig":   return torch.randn(B, R, K).to(dtype)
    if layout == "t01":      return torch.randn(R, B, K).to(dtype).transpose(0, 1)
    if layout == "t01_nd":   return torch.randn(R, B, 2 * K).to(dtype)[..., :K].transpose(0, 1)
    if layout == "slice_rows": return torch.randn(B, 2 * R, K).to(dtype)[:, ::2]
    if layout == "slice_batch": return torch.randn(2 * B, R, K).to(dtype)[::2]
    if layout == "slice_k":  return torch.randn(B, R, 2 * K).to(dtype)[..., :K]
    if layout == "expand":   return torch.randn(B, 1, K).to(dtype).expand(B, R, K)
    if layout == "p4":       return torch.randn(R, 2, B // 2, K).to(dtype).permute(2, 1, 0, 3)
    if layout == "t4_01":    return torch.randn(2, B // 2, R, K).to(dtype).transpose(0, 1)
    if layout == "t4_12":    return torch.randn(B // 2, R, 2, K).to(dtype).transpose(1, 2)
    if layout == "c4":       return torch.randn(2, B // 2, R, K).to(dtype)
    if layout == "p4_nd":    return torch.randn(R, 2, B // 2, 2 * K).to(dtype)[..., :K].permute(2, 1, 0, 3)
    raise ValueError(layout)

class Linear(torch.nn.Module):
    def __init__(s, K, N, dtype, bias=True, act="relu"):
        super().__init__(); s.l = torch.nn.Linear(K, N, bias=bias).to(dtype); s.act = act
    def forward(s, x):
        y = s.l(x)
        return torch.relu(y) if s.act == "relu" else F.gelu(y)

class Dequant(torch.nn.Module):
    def __init__(s, K, N, dtype, scale_param=False):
        super().__init__()
        s.register_buffer("w", torch.randint(-127, 128, (N, K), dtype=torch.int8))
        s.register_buffer("b", torch.randn(N).to(dtype))
        sc = (torch.rand(N, 1) * 0.01 + 0.001).to(dtype)
        if scale_param: s.s = torch.nn.Parameter(sc)
        else: s.register_buffer("s", sc)
    def forward(s, x):
        return torch.relu(F.linear(x, s.w.to(s.s.dtype) * s.s, s.b))

class Matmul(torch.nn.Module):
    def __init__(s, K, N, dtype, param=False):
        super().__init__()
        w = (torch.randn(K, N) / K ** 0.5).to(dtype)
        if param: s.w = torch.nn.Parameter(w)
        else: s.register_buffer("w", w)
    def forward(s, x):
        return F.gelu(x @ s.w)

class Prologue(torch.nn.Module):
    def __init__(s, K, N, R, kind, wdtype=torch.float32):
        super().__init__(); s.kind = kind
        s.register_buffer("w", (torch.randn(N, K) / K ** 0.5).to(wdtype))
        s.register_buffer("b", torch.randn(N).to(wdtype))
        s.register_buffer("s", (torch.rand(K) + 0.5).to(wdtype))
        s.register_buffer("srow", (torch.rand(R, 1) + 0.5).to(wdtype))
    def forward(s, x):
        k = s.kind
        if k == "scale": a = x * s.s
        elif k == "float": a = x.float()
        elif k == "to_bf16": a = x.to(torch.bfloat16)
        elif k == "to_half": a = x.to(torch.float16)
        elif k == "addc": a = x + 0.5
        elif k == "relu": a = torch.relu(x)
        elif k == "srow": a = x * s.srow
        elif k == "scale_relu": a = torch.relu(x * s.s)
        else: raise ValueError(k)
        return torch.relu(F.linear(a, s.w, s.b))

class Residual(torch.nn.Module):
    def __init__(s, K, N, dtype):
        super().__init__()
        s.register_buffer("w", (torch.randn(N, K) / K ** 0.5).to(dtype))
        s.register_buffer("b", torch.randn(N).to(dtype))
    def forward(s, x, r):
        return F.linear(x, s.w, s.b) + r

class NoBias(torch.nn.Module):
    def __init__(s, K, N, dtype):
        super().__init__()
        s.register_buffer("w", (torch.randn(N, K) / K ** 0.5).to(dtype))
    def forward(s, x):
        return torch.relu(F.linear(x, s.w))

class InnerT(torch.nn.Module):
    """transpose in forward then linear (buffer weight)"""
    def __init__(s, K, N, dtype, scale=False):
        super().__init__(); s.scale = scale
        s.register_buffer("w", (torch.randn(N, K) / K ** 0.5).to(dtype))
        s.register_buffer("b", torch.randn(N).to(dtype))
        s.register_buffer("s", (torch.rand(K) + 0.5).to(dtype))
    def forward(s, x):
        x = x.transpose(0, 1)
        if s.scale: x = x * s.s
        return torch.relu(F.linear(x, s.w, s.b))
