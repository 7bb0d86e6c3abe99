"""`python -m fxfuse.demo` (small sizes): runs, matches eager, prints the report."""
from __future__ import annotations

from fxfuse import demo


def test_demo_cpu_small(capsys):
    assert demo.main(["--device", "cpu", "--dim", "64", "--tokens", "32"]) == 0
    out = capsys.readouterr().out
    assert "CPU reference kernel" in out and "all results match eager" in out
    assert out.count("-> PASS") == 5
    # the int8 decode MLPs fuse their dequantization into the GEMMs (CPU reference kernel here)
    dec = out[out.index("int8 weight-only"):]
    fused = int(dec.split("chains fused: ")[1].split(" of ")[0])
    assert fused >= 2, dec
    gptq = out[out.index("GPTQ int8"):]
    assert int(gptq.split("chains fused: ")[1].split(" of ")[0]) == 3 and "(scales per 64 k)" in gptq, gptq
    # packed int4: the unpack folds too, the chain reads the bytes
    int4 = out[out.index("packed int4"):out.index("GPTQ int8")]
    assert int(int4.split("chains fused: ")[1].split(" of ")[0]) == 3 and "(scales per 64 k)" in int4, int4
