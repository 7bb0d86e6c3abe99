import torch, torch.nn.functional as F
torch.manual_seed(0)
for dt in (torch.bfloat16, torch.float16):
    x = torch.randn(2, 64, 16, dtype=dt).transpose(1, 2)   # [2,16,64] non-contiguous
    w = torch.randn(72, 64, dtype=dt); b = torch.randn(72, dtype=dt)
    e = F.linear(x, w, b)
    two = (F.linear(x, w) + b)                                  # mm rounded, then bias rounded
    one = (x.float() @ w.float().T + b.float()).to(dt)          # one rounding
    onec = F.linear(x.contiguous(), w, b)
    print(dt, "eager==two-rounding:", int((e != two).sum()), " eager!=one-rounding:", int((e != one).sum()),
          " contiguous-input linear != one-rounding:", int((onec != one).sum()), "of", e.numel())
