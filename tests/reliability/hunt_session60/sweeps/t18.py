import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from h import *
torch.manual_seed(11)
bf=torch.bfloat16
N,K,G=40,256,32
class M(torch.nn.Module):
    def __init__(self_, f, **bufs):
        super().__init__(); self_.f=f
        for k_,v_ in bufs.items(): self_.register_buffer(k_,v_)
    def forward(self_,*a): return self_.f(self_,*a)
w=i8(N,K)
def nested(m,x):
    W=(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)
    W=(W.view(N,K//G,G)*m.s2[:,:,None]).view(N,K)
    return torch.relu(F.linear(x,W))
def nested_diff(m,x):
    W=(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)
    W=(W.view(N,K//64,64)*m.s3[:,:,None]).view(N,K)
    return torch.relu(F.linear(x,W))
def dq_scale(m,x):
    S=(m.sq.view(N,K//G//4,4).to(bf)*m.ss[:,:,None]).view(N,K//G)
    return torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*S[:,:,None]).view(N,K)))
def dq_scale_pc(m,x):
    S=m.sq.to(bf)*m.c[:,None]
    return torch.relu(F.linear(x,(m.w.view(N,K//G,G).to(bf)*S[:,:,None]).view(N,K)))
def region_then_perchannel_region(m,x):
    W=(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)
    return torch.relu(F.linear(x,W*m.s4))  # s4 [N,K] full
def g_and_k_operand(m,x):
    W=(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)*m.s4
    return torch.relu(F.linear(x,W))
def scale_shared_with_epilogue(m,x):
    W=(m.w.view(N,K//G,G).to(bf)*m.s[:,:,None]).view(N,K)
    return torch.relu(F.linear(x,W)) + m.s.sum(1)
def scale_is_output(m,x):
    s=m.s*2
    W=(m.w.view(N,K//G,G).to(bf)*s[:,:,None]).view(N,K)
    return torch.relu(F.linear(x,W)), s
def merged_input_other_user(m,x):
    t=m.w.view(N,K//G,G).to(bf)
    W=(t*m.s[:,:,None]).view(N,K)
    return torch.relu(F.linear(x,W)), t.sum()
cases={"nested same G":(nested,dict(w=w,s=sc(N,K//G),s2=sc(N,K//G))),
 "nested diff G":(nested_diff,dict(w=w,s=sc(N,K//G),s3=sc(N,K//64))),
 "double-quant scale":(dq_scale,dict(w=w,sq=i8(N,K//G),ss=sc(N,K//G//4))),
 "scale dequant per-channel":(dq_scale_pc,dict(w=w,sq=i8(N,K//G),c=sc(N))),
 "full [N,K] scale after region":(region_then_perchannel_region,dict(w=w,s=sc(N,K//G),s4=sc(N,K))),
 "g_and_k":(g_and_k_operand,dict(w=w,s=sc(N,K//G),s4=sc(N,K))),
 "scale also in epilogue":(scale_shared_with_epilogue,dict(w=w,s=sc(N,K//G))),
 "computed scale also output":(scale_is_output,dict(w=w,s=sc(N,K//G))),
 "region inner value other user":(merged_input_other_user,dict(w=w,s=sc(N,K//G))),
}
for name,(f,b) in cases.items():
    check(name, M(f,**b), lambda:(torch.randn(6,K).to(bf),))
    check(name+" decomp", M(f,**b), lambda:(torch.randn(6,K).to(bf),),decompose=True)
