import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
exec(open("./run11.py").read().split("tests = [")[0].split("torch.manual_seed(0)")[1])
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
m = Variant("stride2", gK=512)
m.g_idx = torch.arange(512, dtype=torch.int32) // 128   # [::2] -> arange(256)//64
check("stride2 (g_idx[::2] of arange(512)//128)", m, X(3, 256), show_spec=True)
# g_idx[::2] where the full buffer IS kgroups 64 for 512 but stride2 gives arange(256)//32 -> 8 groups
m = Variant("stride2", gK=512, G=32)
m.g_idx = torch.arange(512, dtype=torch.int32) // 64
check("stride2 b", m, X(3, 256), show_spec=True)
# second_half with buffer kgroups: g_idx[K:] - K/G
m = Variant("second_half", gK=512)
check("second_half", m, X(3, 256))
