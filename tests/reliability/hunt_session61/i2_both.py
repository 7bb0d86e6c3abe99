from common import *
import i_spaces as s
m = s.BothPacked()
print(fxfuse.report(torch.export.export(m, (packed(8, 32),)), only_profitable=False))
