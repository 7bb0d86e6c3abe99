"""Dump folders: FXFUSE_DUMP / dump_dir= give one numbered folder per graph with the graphs,
IR, report and, per fused chain, its spec, .dot and generated .cu (+ .ptx with NVRTC)."""
from __future__ import annotations

import json
import os

import pytest
import torch

import fxfuse
from fxfuse.dump import spec_to_dot
from helpers import MLP, run_python


def test_dump_folder_contents(tmp_path, standin):
    model = MLP(act="relu").eval()
    with torch.no_grad():
        torch.compile(model, backend=fxfuse.backend_with(dump_dir=str(tmp_path)))(torch.randn(8, 32))
    (folder,) = sorted(tmp_path.iterdir())
    assert folder.name.endswith("_inference")
    files = {p.name for p in folder.iterdir()}
    assert {"graph_before.txt", "graph_after.txt", "before.ir", "after.ir", "report.txt", "report.json",
            "chain_0.dot", "chain_0.spec"} <= files
    assert any(f.endswith(".cu") for f in files), files
    assert "gemm_chain" in (folder / "graph_after.txt").read_text()
    assert "fxfuse.gemm_chain.default" in (folder / "after.ir").read_text()
    report = json.loads((folder / "report.json").read_text())
    assert len(report["rewrites"]) == 1 and len(report["report"]) == 2
    assert "not fused: no_epilogue_no_prologue" in (folder / "report.txt").read_text()


def test_dump_env_var(tmp_path):
    x = torch.randn(8, 32)
    torch.save(MLP(act="relu").eval(), str(tmp_path / "m.pt"))
    env_dir = tmp_path / "d"
    code = ("import os, torch, fxfuse\nos.environ['FXFUSE_DUMP'] = sys.argv[1]\n"
            "m = torch.load(sys.argv[2], weights_only=False)\n"
            "with torch.no_grad(): torch.compile(m, backend='fxfuse')(torch.randn(8, 32))\n")
    res = run_python(code, str(env_dir), str(tmp_path / "m.pt"))
    assert res.returncode == 0, res.stderr
    assert len(list(env_dir.iterdir())) == 1



def test_a_dump_folder_that_cannot_be_written_warns_and_the_rewrite_goes_on(tmp_path):
    """The dump is a debugging aid: a dump_dir that is a file (so no folder can be made under it) warns and the
    program is still rewritten and right (it raised FileExistsError out of rewrite and torch.compile, found by a
    session-49 review)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    model = MLP(act="relu").eval()
    ep = torch.export.export(model, (torch.randn(8, 32),))
    with pytest.warns(RuntimeWarning, match="no dump written"):
        ep2 = fxfuse.rewrite(ep, dump_dir=str(blocker))
    assert any(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep2.graph.nodes)
    x = torch.randn(8, 32)
    assert torch.allclose(ep2.module()(x), model(x), rtol=1e-4, atol=1e-4)


def test_spec_to_dot():
    spec = "fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n%2 = mm %0 %1 : f32\n" \
           "%3 = relu %2 : f32\noutput %3\n"
    dot = spec_to_dot(spec)
    assert "v0 -> v2;" in dot and "v2 -> v3;" in dot and "v3 -> out_3;" in dot


def test_dump_has_ptx_for_bf16(tmp_path, standin):
    """NVRTC (pip package) compiles the generated kernel to PTX without a GPU."""
    if standin or not fxfuse._C.nvrtc_available():
        import pytest

        pytest.skip("needs fxfuse._C with NVRTC")
    model = MLP(256, 512, act="gelu_tanh").to(torch.bfloat16).eval()
    with torch.no_grad():
        fxfuse.rewrite(torch.export.export(model, (torch.randn(64, 256, dtype=torch.bfloat16),)),
                       dump_dir=str(tmp_path))
    (folder,) = sorted(tmp_path.iterdir())
    files = {p.name for p in folder.iterdir()}
    errors = {f: (folder / f).read_text()[:400] for f in files if f.endswith(".error.txt")}
    assert not errors, errors
    assert any(f.endswith(".ptx") for f in files), files


def test_the_dump_is_utf8_whatever_the_locale(tmp_path):
    """report.txt / report.json hold "→" (and the graphs may hold any name): written in the locale's encoding,
    an ASCII or Latin-1 locale made the dump raise UnicodeEncodeError out of fxfuse.rewrite (found in session
    50). The files are UTF-8 now, whatever the locale."""
    code = ("import locale, torch, fxfuse\nassert locale.getpreferredencoding(False).lower() != 'utf-8'\n"
            "m = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())\n"
            "fxfuse.rewrite(torch.export.export(m, (torch.randn(4, 16),)), dump_dir=sys.argv[1])\n")
    res = run_python(code, str(tmp_path / "d"), env={"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
                                                     "PYTHONCOERCECLOCALE": "0"})
    assert res.returncode == 0, res.stderr[-2000:]
    (folder,) = (tmp_path / "d").iterdir()
    assert "→" in (folder / "report.txt").read_text(encoding="utf-8")
