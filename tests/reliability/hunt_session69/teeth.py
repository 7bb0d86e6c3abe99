import torch
torch.manual_seed(0)
for dt in [torch.float32, torch.bfloat16, torch.float16]:
    for (B, R, K, N) in [(64, 2, 1024, 128), (16, 4, 4096, 64), (64, 2, 4096, 1), (16, 2, 2048, 2048), (64,1,512,16)]:
        x = torch.randn(R, B, K).to(dt).transpose(0, 1); w = (torch.randn(N, K) / K ** 0.5).to(dt)
        e = torch.matmul(x, w.t()); one = torch.mm(x.reshape(-1, K), w.t()).reshape(e.shape)
        print(dt, (B, R, K, N), "bmm vs mm differing:", int((e != one).sum()), "/", e.numel())
