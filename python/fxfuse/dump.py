"""Debug dumps: ``FXFUSE_DUMP=DIR`` or ``dump_dir=``. One numbered folder per graph:

  graph_before.txt / graph_after.txt   FX text of the graph before and after the rewrite
  before.ir / after.ir                 the IR text (docs/ir.md) sent to / read back from
  pass.ir                              the pass's own ``rewritten_ir`` (when it returns one)
  report.txt / report.json             every GEMM: fused or the reason; counters; the plan
  <kernel>.cu / <kernel>.ptx           per rewrite, the generated CUDA and its PTX
  chain_<i>.dot / .svg                 per rewrite, the chain spec as a graph
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
import subprocess
from typing import Any

log = logging.getLogger("fxfuse")

__all__ = ["dump_root", "new_dump_folder", "write_graph_dump", "spec_to_dot"]

_seq = itertools.count()


def dump_root(dump_dir: str | None) -> str | None:
    return dump_dir or os.environ.get("FXFUSE_DUMP") or None


def new_dump_folder(root: str, label: str) -> str:
    """``root/NNN_label``, the first free number (safe against concurrent writers)."""
    os.makedirs(root, exist_ok=True)
    label = re.sub(r"[^A-Za-z0-9_.-]", "_", label) or "graph"
    while True:
        path = os.path.join(root, f"{next(_seq):03d}_{label}")
        try:
            os.makedirs(path)
            return path
        except FileExistsError:
            continue


def _write(folder: str, name: str, text: str | bytes) -> None:
    # UTF-8 whatever the locale: reports hold "→" and graphs any name; in an ASCII or Latin-1
    # locale the default encoding raised UnicodeEncodeError out of the rewrite or compile.
    if isinstance(text, bytes):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(text)
    else:
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)


def spec_to_dot(spec: str, title: str = "chain") -> str:
    """Graphviz text of a ``fxfuse.chain v1`` spec: one node per value, edges from operands."""
    out = [f'digraph "{title}" {{', "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for line in spec.strip().splitlines()[2:]:
        tok = line.split()
        if tok[0] == "expect":  # a fact about an input no value reads (docs/spec.md): a note, no edges
            out.append(f'  expect_{tok[1]} [label="{" ".join(tok)}", shape=note];')
            continue
        if tok[0] == "output":
            out.append(f'  out_{tok[1][1:]} [label="output", shape=ellipse];')
            out.append(f"  v{tok[1][1:]} -> out_{tok[1][1:]};")
            continue
        vid = tok[0][1:]
        body = " ".join(tok[2:])
        style = ', style=filled, fillcolor="#ffd27f"' if tok[2] == "mm" else (
            ', style=filled, fillcolor="#d7e8ff"' if tok[2] == "input" else "")
        label = body.replace('"', '\\"')
        out.append(f'  v{vid} [label="%{vid} = {label}"{style}];')
        for t in tok[3:]:
            if t.startswith("%"):
                out.append(f"  v{t[1:]} -> v{vid};")
    out.append("}")
    return "\n".join(out) + "\n"


def _kernel_files(folder: str, rid: int, spec: str, shape, arch: str) -> None:
    """``<name>.cu`` and ``<name>.ptx`` through ``_C.generate_cuda`` / ``_C.compile_ptx`` for the
    problem shape (M, N, K, B). A failure is written as ``<file>.error.txt``, never raised."""
    from . import _C

    gen = getattr(_C, "generate_cuda", None)
    if gen is None:
        return
    m, n, k, b = shape or (1024, 1024, 1024, 1)
    try:
        res = gen(spec, m, n, k, arch, b)
    except Exception as e:  # noqa: BLE001
        _write(folder, f"kernel_{rid}.error.txt", f"generate_cuda(M={m}, N={n}, K={k}, B={b}, {arch}) failed: {e}\n")
        return
    if isinstance(res, dict):
        name, code = res.get("name") or f"kernel_{rid}", res.get("code") or ""
    elif isinstance(res, (tuple, list)):
        name, code = res[0], res[1]
    else:
        name, code = f"kernel_{rid}", str(res)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    _write(folder, f"{name}.cu", f"// fxfuse rewrite {rid}: M={m} N={n} K={k} B={b} arch={arch}\n" + code)
    ptx_fn = getattr(_C, "compile_ptx", None)
    if ptx_fn is None:
        return
    try:
        _write(folder, f"{name}.ptx", ptx_fn(spec, m, n, k, arch, b))
    except Exception as e:  # noqa: BLE001 - NVRTC missing or a compile error: keep the log
        _write(folder, f"{name}.ptx.error.txt", f"{e}\n")


def write_graph_dump(root: str, label: str, *, before_fx: str, after_fx: str, before_ir: str,
                     after_ir: str, plan: dict[str, Any], skipped: dict[int, str],
                     report_text: str, kernels=(), arch: str = "sm_90") -> str:
    folder = new_dump_folder(root, label)
    _write(folder, "graph_before.txt", before_fx)
    _write(folder, "graph_after.txt", after_fx)
    _write(folder, "before.ir", before_ir)
    _write(folder, "after.ir", after_ir)
    if plan.get("rewritten_ir"):
        _write(folder, "pass.ir", plan["rewritten_ir"])
    _write(folder, "report.txt", report_text)
    _write(folder, "report.json", json.dumps({**plan, "skipped": {str(k): v for k, v in skipped.items()}},
                                             indent=2, ensure_ascii=False) + "\n")
    dot = shutil.which("dot")
    shapes = {rid: shape for rid, _, shape in kernels}
    for rw in plan.get("rewrites") or []:
        rid = rw.get("id", 0)
        dot_text = spec_to_dot(rw["spec"], f"chain_{rid}")
        _write(folder, f"chain_{rid}.dot", dot_text)
        _write(folder, f"chain_{rid}.spec", rw["spec"])
        if dot:
            try:
                subprocess.run([dot, "-Tsvg", "-o", os.path.join(folder, f"chain_{rid}.svg")],
                               input=dot_text.encode(), check=True, timeout=30, capture_output=True)
            except Exception as e:  # noqa: BLE001
                log.debug("fxfuse: dot failed: %s", e)
        if rid in shapes:  # applied rewrites only
            _kernel_files(folder, rid, rw["spec"], shapes[rid], arch)
    log.info("fxfuse: dump written to %s", folder)
    return folder
