import torch
torch.manual_seed(0)
for (K, N, M) in [(64, 64, 1), (256, 64, 3), (512, 40, 6)]:
    W = torch.randn(K, N); b = torch.randn(N); x = torch.randn(M, K)
    Wk = W.t().contiguous().t()   # K-major strides (1, K)
    r_addmm_n = torch.addmm(b, x, W)
    r_addmm_k = torch.addmm(b, x, Wk)
    r_mm_add_n = x @ W + b
    r_mm_add_k = x @ Wk + b
    print(K, N, M, "addmm N-major == mm+add N-major:", torch.equal(r_addmm_n, r_mm_add_n),
          "| addmm K-major == mm+add K-major:", torch.equal(r_addmm_k, r_mm_add_k),
          "| addmm N-major == addmm K-major:", torch.equal(r_addmm_n, r_addmm_k),
          "| mm N == mm K:", torch.equal(x @ W, x @ Wk))
