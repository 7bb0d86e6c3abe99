import sys, os, json
sys.path[:0] = ["bench/sm90", "bench"]
import torch, fxfuse._C
from fxfuse import autotune
from chain_specs import chains
from compare_tiles import inputs_for
orig = autotune.time_interleaved
log = []
def spy(fns, reps, prepare=None, failures=None):
    r = orig(fns, reps, prepare, failures)
    log.append({n: [round(x, 4) for x in v] for n, v in r.items()})
    return r
autotune.time_interleaved = spy
for mkn in ("512x4096x4096",):
    M, K, N = map(int, mkn.split("x"))
    for name in ("silu", "bias_gelu"):
        spec = chains()[name]
        ins = inputs_for(spec, M, K, N)
        for rnd in range(2):
            log.clear()
            res = autotune.measure(ins, spec, reps=10)
            warm = {k.split()[0] + " " + (k.split()[1] if len(k.split()) > 1 else ""): v for k, v in log[0].items()}
            print(mkn, name, rnd, "warm-up:", {k: v for k, v in log[0].items() if k == "aten" or "128x128" in k and "pingpong" not in k})
            print("   times aten", res["times_ms"].get("aten"), "warmup_only", res["warmup_only"])
