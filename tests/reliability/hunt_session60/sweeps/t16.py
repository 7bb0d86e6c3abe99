import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
bf=torch.bfloat16
class DK(torch.nn.Module):
    def forward(s,xq,sx,w):
        M,K=xq.shape; G=32
        x=(xq.view(M,K//G,G).to(bf)*sx[:,:,None]).view(M,K)
        return torch.relu(F.linear(x,w))
class DK0(torch.nn.Module):
    def forward(s,x,w): return torch.relu(F.linear(x,w))
kd=torch.export.Dim("kk",min=1,max=64)
ep=torch.export.export(DK(),(i8(4,128),sc(4,4),torch.randn(16,128).to(bf)),dynamic_shapes=({1:32*kd},{1:kd},{1:32*kd}))
print(fxfuse.report(ep,only_profitable=False))
ep=torch.export.export(DK0(),(torch.randn(4,128).to(bf),torch.randn(16,128).to(bf)),dynamic_shapes=({1:32*kd},{1:32*kd}))
print(fxfuse.report(ep,only_profitable=False))
