# Finding 8 (minor): under the torch.compile backend in training, torch.cond's branch graphs (forward branches and
# the branches' backward graphs) are all titled "inference" in fxfuse.report() and the dump folders (NNN_inference);
# their entries carry bare node names ("addmm"), so the report cannot say which branch or which pass (fwd/bwd) a chain
# belongs to (fxfuse.rewrite names them true_graph_0.linear).
# Run: cd /work/main && PYTHONPATH=python python3 tests/reliability/hunt_session59/f8_compile_branch_graph_labels.py
import os, shutil
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"; os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
os.environ["FXFUSE_DUMP"] = "/tmp/fxfuse_hunt59_dump_f8"; shutil.rmtree("/tmp/fxfuse_hunt59_dump_f8", ignore_errors=True)
import warnings; warnings.filterwarnings("ignore")
import torch, fxfuse, torch.nn.functional as F
class CondModel(torch.nn.Module):
    def __init__(s): super().__init__(); s.a = torch.nn.Linear(32, 32); s.b = torch.nn.Linear(32, 32); s.c = torch.nn.Linear(32, 32)
    def forward(s, x):
        y = s.c(x)
        return torch.cond(x.sum() > 0, lambda t: F.relu(s.a(t)), lambda t: torch.sigmoid(s.b(t)), (y,))
x = torch.randn(8, 32, requires_grad=True)
torch.compile(CondModel().train(), backend="fxfuse")(x).sum().backward()
print(fxfuse.report())
print(sorted(os.listdir("/tmp/fxfuse_hunt59_dump_f8")))
