import torch, torch.nn as nn
import torch.nn.functional as F
# A minimal copy of GPTQ's torch dequantization (gptqmodel TorchQuantLinear, bits=4, desc_act=False), written from its
# description: qweight int32 [K/8, N] (eight 4-bit values of k per word, low first), qzeros int32 [K/G, N/8] (eight
# zero points of n per word), scales f16 [K/G, N], g_idx int32 [K] = k // G, wf = [0, 4, ..., 28] int32.
class GPTQ(nn.Module):
    def __init__(s, K, N, G):
        super().__init__()
        s.K, s.N, s.G = K, N, G
        s.register_buffer("qweight", torch.randint(-2**31, 2**31 - 1, (K // 8, N), dtype=torch.int32))
        s.register_buffer("qzeros", torch.randint(-2**31, 2**31 - 1, (K // G, N // 8), dtype=torch.int32))
        s.register_buffer("scales", torch.rand(K // G, N).half() / 50)
        s.register_buffer("g_idx", torch.arange(K, dtype=torch.int32) // G)
        s.register_buffer("wf", torch.tensor(list(range(0, 32, 4)), dtype=torch.int32).unsqueeze(0), persistent=False)
    def forward(s, x):
        zeros = torch.bitwise_right_shift(torch.unsqueeze(s.qzeros, 2).expand(-1, -1, 8), s.wf.unsqueeze(0)).to(torch.int8)
        zeros = torch.bitwise_and(zeros, 15).reshape(s.scales.shape)
        weight = torch.bitwise_and(torch.bitwise_right_shift(torch.unsqueeze(s.qweight, 1).expand(-1, 8, -1),
                                                             s.wf.unsqueeze(-1)).to(torch.int8), 15)
        weight = weight.reshape(weight.shape[0] * weight.shape[1], weight.shape[2])
        g = s.g_idx.long()
        w = s.scales[g] * (weight - zeros[g])
        return torch.matmul(x, w.to(x.dtype))
m = GPTQ(256, 64, 128)
x = torch.randn(4, 256).half()
ep = torch.export.export(m, (x,))
print(ep.graph_module.graph)
print([ (s.kind, s.target) for s in ep.graph_signature.input_specs])
