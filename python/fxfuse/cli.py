"""Command line: ``fxfuse`` / ``python -m fxfuse``.

    fxfuse rewrite in.pt2 -o out.pt2 [--dump DIR] [--min-k N] [--no-fp32] [--precompile-sizes 1,16,512]
    fxfuse report in.pt2 [--json]
    fxfuse version
"""
from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
import zipfile

__all__ = ["main"]


def _options(args):
    from .pass_driver import Options

    return Options(min_k=args.min_k, allow_fp32=not args.no_fp32, arch=args.arch,
                   precompile_sizes=getattr(args, "precompile_sizes", ()))


def _sizes(text: str) -> tuple[int, ...]:
    """--precompile-sizes 1,16,512 (positive integers, comma-separated)."""
    try:
        sizes = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive integers: {text!r}")
    return sizes


def _check_writable(path: str) -> None:
    """Raises OSError (one error line from main) for an output that cannot be written, before the
    rewrite runs: torch.export.save reports it as a RuntimeError traceback, after all the work."""
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "the output is a directory", path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(errno.ENOENT, "the output's directory does not exist", parent)
    if not os.access(parent, os.W_OK):
        raise PermissionError(errno.EACCES, "the output's directory is not writable", parent)


class _Held(logging.Handler):
    """Keeps the records it is given (torch.export.load's warning with the reason it could not load)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines += [ln for ln in self.format(record).splitlines() if ln.strip()]


def _load_program(path: str):
    """torch.export.load, its RuntimeError as a ValueError, which main() prints in one line like the other bad
    inputs (a `torch.save(module)` zip had ended in a traceback). torch logs the reason as a warning with a
    traceback and raises "We ran into an error when deserializing": the warning's last line is the reason, so
    it goes into the one line, and the whole warning shows with --verbose."""
    import torch

    export_log = logging.getLogger("torch.export")
    held, handlers, propagate = _Held(), export_log.handlers[:], export_log.propagate
    if logging.getLogger().isEnabledFor(logging.INFO):  # --verbose: torch's own warning too
        export_log.addHandler(held)
    else:
        export_log.handlers, export_log.propagate = [held], False
    try:
        return torch.export.load(path)
    except RuntimeError as e:
        reason = held.lines[-1].strip() if held.lines else str(e).splitlines()[0]
        raise ValueError(f"{path}: torch.export.load could not load it (is it a program torch.export.save "
                         f"wrote, with its custom ops registered?): {reason}") from e
    finally:
        export_log.handlers, export_log.propagate = handlers, propagate


def _cmd_rewrite(args) -> int:
    import torch

    from .export_rewrite import rewrite
    from .stats import stats

    _check_writable(args.output)
    ep = _load_program(args.input)
    out = rewrite(ep, dump_dir=args.dump, options=_options(args))
    torch.export.save(out, args.output)
    s = stats()
    print(f"fxfuse: {s['chains_fused']} chain(s) fused of {s['gemms_seen']} GEMM(s); wrote {args.output}")
    for reason, n in sorted(s["rejections"].items()):
        print(f"  not fused ({reason}): {n}")
    return 0


def _cmd_report(args) -> int:
    import torch

    from .export_rewrite import report

    ep = _load_program(args.input)
    rep = report(ep, options=_options(args))
    if args.json:
        print(json.dumps([plan for _, plan, _ in rep.graphs], indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(str(rep))
    return 0


def _cmd_version(args) -> int:
    import torch

    from . import _C

    print(f"fxfuse library {getattr(_C, 'library_version', lambda: '?')()}, torch {torch.__version__}, "
          f"nvrtc {'yes' if getattr(_C, 'nvrtc_available', lambda: False)() else 'no'}, "
          f"cuda driver {'yes' if getattr(_C, 'cuda_driver_available', lambda: False)() else 'no'}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fxfuse", description="GEMM prologue/epilogue fusion for PyTorch programs")
    p.add_argument("-v", "--verbose", action="store_true", help="log what the pass does")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp):
        sp.add_argument("input", help="an ExportedProgram saved with torch.export.save (.pt2)")
        sp.add_argument("--min-k", type=int, default=1, help="leave GEMMs with K below this alone")
        sp.add_argument("--no-fp32", action="store_true", help="do not fuse fp32 GEMMs")
        sp.add_argument("--arch", default=None, help="target arch, e.g. sm_90 (default: this GPU's, else sm_90)")

    rw = sub.add_parser("rewrite", help="fuse chains and save a new .pt2")
    common(rw)
    rw.add_argument("-o", "--output", required=True)
    rw.add_argument("--dump", default=None, metavar="DIR", help="write a dump folder (graphs, report, kernels)")
    rw.add_argument("--precompile-sizes", type=_sizes, default=(), metavar="M,M,...",
                    help="with a symbolic batch dim, also compile each fused chain's kernels for these row "
                         "counts M now, into this machine's kernel cache (on a GPU machine)")
    rw.set_defaults(fn=_cmd_rewrite)

    rp = sub.add_parser("report", help="print what would fuse and every rejection reason")
    common(rp)
    rp.add_argument("--json", action="store_true", help="print the pass's plans as JSON")
    rp.set_defaults(fn=_cmd_report)

    ver = sub.add_parser("version", help="print versions and what the runtime can do")
    ver.set_defaults(fn=_cmd_version)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Reports hold "→": a stdout that is not UTF-8 (an ASCII or Latin-1 locale) raised
    # UnicodeEncodeError and the command printed only that; escape what it cannot show instead.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    try:
        import fxfuse  # noqa: F401 - registers the op before any load
    except ImportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        return args.fn(args)
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        # a missing, unreadable or unwritable file, a file that is not a saved program, an invalid option
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
