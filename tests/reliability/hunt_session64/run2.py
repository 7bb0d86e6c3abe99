import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from harness import *
from variants import Q
torch.manual_seed(0)
def X(*shape, dt=torch.float16):
    return lambda: (torch.randn(*shape).to(dt),)
f16, bf16, f32 = torch.float16, torch.bfloat16, torch.float32
i8, i16, i32, i64 = torch.int8, torch.int16, torch.int32, torch.int64
check("old +1 before & (i8)", Q(256, 64, 64, zmode="old_plus1_before_and"), X(4, 256))
check("old +1 before & (i16)", Q(256, 64, 64, zmode="old_plus1_before_and", dq=i16), X(4, 256))
check("old +1 after & (i8)", Q(256, 64, 64, zmode="old_plus1_after_and"), X(4, 256))
check("old +1 after & (i32 zeros)", Q(256, 64, 64, zmode="old_plus1_after_and", zdq=i32), X(4, 256))
check("zeros int32 no convert", Q(256, 64, 64, zdq=i32), X(4, 256))
check("zeros no convert at all", Q(256, 64, 64, zdq=None), X(4, 256))
check("weight no convert (i32)", Q(256, 64, 64, dq=i32, zdq=i8), X(4, 256))
check("all int32", Q(256, 64, 64, dq=i32, zdq=i32), X(4, 256))
check("and first then i8", Q(256, 64, 64, and_first=True), X(4, 256))
check("and first no convert", Q(256, 64, 64, and_first=True, dq=None, zdq=None), X(4, 256))
check("dq int16", Q(256, 64, 64, dq=i16, zdq=i16), X(4, 256))
check("dq int64", Q(256, 64, 64, dq=i64, zdq=i64), X(4, 256))
check("dq uint8", Q(256, 64, 64, dq=torch.uint8, zdq=torch.uint8), X(4, 256))
check("8bit i16", Q(256, 64, 64, bits=8, dq=i16), X(4, 256), show_spec=True)
check("8bit i8 (&255 on int8)", Q(256, 64, 64, bits=8, dq=i8), X(4, 256), show_spec=True)
check("8bit i32", Q(256, 64, 64, bits=8, dq=i32), X(4, 256))
check("2bit i8", Q(256, 64, 64, bits=2), X(4, 256), show_spec=True)
check("2bit i16", Q(256, 64, 64, bits=2, dq=i16), X(4, 256))
check("4bit mask 7", Q(256, 64, 64, mask=7), X(4, 256), show_spec=True)
check("4bit mask 31", Q(256, 64, 64, mask=31), X(4, 256), show_spec=True)
check("4bit mask 255", Q(256, 64, 64, mask=255), X(4, 256), show_spec=True)
