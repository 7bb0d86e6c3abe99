"""Writes each `graph { ... }` of the pass's lit-style tests (tests/pass/*.ir) to its own file, as seeds for
ir_parser_fuzz: they cover what the checked-in corpus (fuzz/corpus/ir_parser/) hardly does (AWQ's and GPTQ's storage,
the k-groups, the addmm mark). Session 71 seeded with them: 9,967 -> 11,330 edges before fuzzing (FUZZING.md).

  python3 fuzz/seeds_from_pass_tests.py OUT_DIR
"""
import pathlib
import sys


def graphs(text):
    """The graph blocks of one .ir file, each from its `graph {` line to the `}` line that closes it."""
    block = None
    for line in text.splitlines(keepends=True):
        if block is None and line.startswith("graph {"):
            block = [line]
        elif block is not None:
            block.append(line)
            if line.rstrip() == "}":
                yield "".join(block)
                block = None


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in sorted(pathlib.Path(__file__).resolve().parent.parent.glob("tests/pass/*.ir")):
        for i, g in enumerate(graphs(path.read_text())):
            (out / f"{path.stem}_{i:03d}.ir").write_text(g)
            n += 1
    print(f"{n} graphs -> {out}")


if __name__ == "__main__":
    main()
