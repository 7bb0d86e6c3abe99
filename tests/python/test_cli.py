"""The command line: `fxfuse rewrite in.pt2 -o out.pt2 --dump DIR`, `fxfuse report in.pt2`."""
from __future__ import annotations

import json
import os

import torch

from helpers import MLP, run_cli, run_python


def _saved_mlp(tmp_path):
    model = MLP(act="relu").eval()
    x = torch.randn(8, 32)
    path = tmp_path / "in.pt2"
    torch.export.save(torch.export.export(model, (x,)), str(path))
    return model, path


def test_cli_rewrite_then_run(tmp_path):
    model, path = _saved_mlp(tmp_path)
    out, dump = tmp_path / "out.pt2", tmp_path / "dump"
    res = run_cli("rewrite", str(path), "-o", str(out), "--dump", str(dump))
    assert res.returncode == 0, res.stderr
    assert "1 chain(s) fused of 2 GEMM(s)" in res.stdout
    assert "no_epilogue_no_prologue" in res.stdout
    assert out.exists() and any(dump.iterdir())
    x = torch.randn(8, 32)
    torch.save((x, model(x).detach()), str(tmp_path / "io.pt"))
    res = run_python("import torch, fxfuse\nep = torch.export.load(sys.argv[1])\nx, ref = torch.load(sys.argv[2])\n"
                     "assert (ep.module()(x) - ref).abs().max() < 1e-4\n", str(out), str(tmp_path / "io.pt"))
    assert res.returncode == 0, res.stderr


def test_cli_report(tmp_path):
    _, path = _saved_mlp(tmp_path)
    res = run_cli("report", str(path))
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ": fused" in ln or "not fused" in ln]
    assert len(lines) == 2 and any("no_epilogue_no_prologue" in ln for ln in lines)
    res = run_cli("report", str(path), "--json")
    (plan,) = json.loads(res.stdout)
    assert {e["status"] for e in plan["report"]} == {"fused", "not_fused"}


def test_cli_errors(tmp_path):
    res = run_cli("report", str(tmp_path / "missing.pt2"))
    assert res.returncode == 2 and "error" in res.stderr
    # not a saved program, a directory: the CLI's own last line says so (torch may log its own traceback first)
    (tmp_path / "text.pt2").write_text("not a zip")
    for bad in (tmp_path / "text.pt2", tmp_path):
        res = run_cli("report", str(bad))
        assert res.returncode == 2 and res.stderr.strip().splitlines()[-1].startswith("error:"), res.stderr
    res = run_cli("version")
    assert res.returncode == 0 and "torch" in res.stdout


def test_cli_a_zip_that_holds_no_program_is_one_error_line(tmp_path):
    """A `torch.save(module)` file is a zip, but no ExportedProgram: torch.export.load's RuntimeError ended the
    command in a traceback, rc 1 (hunt B, session 53)."""
    path = tmp_path / "module.pt2"
    torch.save(MLP(act="relu"), str(path))
    for cmd in (["report", str(path)], ["rewrite", str(path), "-o", str(tmp_path / "out.pt2")]):
        res = run_cli(*cmd)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        last = res.stderr.strip().splitlines()[-1]
        assert "torch.export.load could not load it" in last and "archive_format" in last, res.stderr


def test_cli_precompile_sizes_are_parsed_and_checked(tmp_path):
    """--precompile-sizes reaches Options (a CPU program compiles no kernels: the rewrite still
    runs); a malformed list is refused by the parser before anything loads."""
    from fxfuse.cli import _options, _parser

    args = _parser().parse_args(["rewrite", "in.pt2", "-o", "out.pt2", "--precompile-sizes", "512,1,16"])
    assert _options(args).precompile_sizes == (1, 16, 512)
    assert _options(_parser().parse_args(["report", "in.pt2"])).precompile_sizes == ()
    _, path = _saved_mlp(tmp_path)
    res = run_cli("rewrite", str(path), "-o", str(tmp_path / "out.pt2"), "--precompile-sizes", "1,16")
    assert res.returncode == 0, res.stderr
    for bad in ("0,16", "a,b", ","):
        res = run_cli("rewrite", str(path), "-o", str(tmp_path / "bad.pt2"), "--precompile-sizes", bad)
        assert res.returncode == 2 and "precompile-sizes" in res.stderr, (bad, res.stderr)


def test_cli_invalid_option_is_an_error(tmp_path):
    """An option the pass refuses (`--min-k -5`) is an error, not a silent run that fuses nothing and reports
    no GEMM (found by a session-49 review)."""
    _, path = _saved_mlp(tmp_path)
    res = run_cli("rewrite", str(path), "-o", str(tmp_path / "out.pt2"), "--min-k", "-5")
    assert res.returncode == 2 and "min_k" in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_cli_an_output_it_cannot_write_is_one_error_line(tmp_path):
    """`-o` in a folder that does not exist, or naming a folder: one `error:` line and rc 2, before the rewrite
    runs (it was torch's RuntimeError traceback from the save, rc 1, after the whole rewrite)."""
    _, path = _saved_mlp(tmp_path)
    for bad in (tmp_path / "missing" / "out.pt2", tmp_path):
        res = run_cli("rewrite", str(path), "-o", str(bad))
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.strip().splitlines()[-1].startswith("error:"), res.stderr


def test_cli_report_on_an_ascii_terminal(tmp_path):
    """The report's chains hold "→": on a stdout that is not UTF-8 (PYTHONIOENCODING=ascii, a C locale) `fxfuse
    report` printed nothing but "error: 'ascii' codec can't encode character" and rc 2 (found in session 50).
    What the terminal cannot show is escaped now."""
    _, path = _saved_mlp(tmp_path)
    res = run_python("from fxfuse.cli import main\nsys.exit(main(sys.argv[1:]))", "report", str(path),
                     env={"PYTHONIOENCODING": "ascii"})
    assert res.returncode == 0, res.stderr
    assert "fused (rewrite 0)" in res.stdout and "\\u2192" in res.stdout, res.stdout
