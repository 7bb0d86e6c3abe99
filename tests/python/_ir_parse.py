"""A small reader of the IR text form (docs/ir.md), for tests only: it checks that what
ir_export writes follows the grammar, and feeds the pure-Python stand-in pass."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TensorType:
    dtype: str
    dims: list          # int or str (symbol name or "(expr)")
    strides: list | None
    device: str | None


@dataclass
class Node:
    name: str
    type: Any            # TensorType | tuple | "sym" | "none" | "?"
    op: str              # "placeholder" | "get_attr" | target name
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)


@dataclass
class Ref:
    name: str


@dataclass
class Enum:
    name: str


@dataclass
class Sym:
    text: str


@dataclass
class Device:
    text: str


DTYPES = {"bool", "i8", "u8", "i32", "i64", "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_NUM = re.compile(r"-?(inf|nan|\d+(\.\d*)?([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)")


class ParseError(ValueError):
    pass


class _Cursor:
    def __init__(self, text: str, line: int):
        self.s, self.i, self.line = text, 0, line

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def peek(self, t: str) -> bool:
        self.ws()
        return self.s.startswith(t, self.i)

    def eat(self, t: str):
        if not self.peek(t):
            raise ParseError(f"{self.line}:{self.i + 1}: expected {t!r} in {self.s!r}")
        self.i += len(t)

    def name(self) -> str:
        self.ws()
        m = _NAME.match(self.s, self.i)
        if not m:
            raise ParseError(f"{self.line}:{self.i + 1}: expected a name in {self.s!r}")
        self.i = m.end()
        return m.group(0)

    def dim(self):
        self.ws()
        if self.s[self.i] == "(":
            j = self.s.index(")", self.i)
            text = self.s[self.i:j + 1]
            self.i = j + 1
            return text
        m = re.compile(r"-?\d+").match(self.s, self.i)
        if m:
            self.i = m.end()
            return int(m.group(0))
        return self.name()

    def dims(self, close: str) -> list:
        out = []
        if self.peek(close):
            return out
        out.append(self.dim())
        while self.peek(","):
            self.eat(",")
            out.append(self.dim())
        return out

    def type(self):
        for word in ("sym", "none", "?"):
            if self.peek(word) and not (word != "?" and self.s[self.i + len(word)].isalnum()):
                self.eat(word)
                return word
        if self.peek("("):
            self.eat("(")
            items = [self.type()]
            while self.peek(","):
                self.eat(",")
                items.append(self.type())
            self.eat(")")
            return tuple(items)
        dt = self.name()
        if dt not in DTYPES:
            raise ParseError(f"{self.line}: unknown dtype {dt}")
        self.eat("[")
        dims = self.dims("]")
        self.eat("]")
        strides = None
        if self.peek("{"):
            self.eat("{")
            strides = self.dims("}")
            self.eat("}")
        dev = None
        if self.peek("@"):
            self.eat("@")
            m = re.compile(r"[A-Za-z0-9_:]+").match(self.s, self.i)
            dev = m.group(0)
            self.i = m.end()
        return TensorType(dt, dims, strides, dev)

    def string(self) -> str:
        self.eat('"')
        out = []
        while self.s[self.i] != '"':
            c = self.s[self.i]
            if c == "\\":
                self.i += 1
                c = {"n": "\n"}.get(self.s[self.i], self.s[self.i])
            out.append(c)
            self.i += 1
        self.i += 1
        return "".join(out)

    def arg(self):
        self.ws()
        c = self.s[self.i]
        if c == "%":
            self.i += 1
            return Ref(self.name())
        if c == '"':
            return self.string()
        if c == "[":
            self.eat("[")
            items = self.args("]")
            self.eat("]")
            return items[0]
        for kw, cls in (("device(", Device), ("enum(", Enum), ("sym(", Sym)):
            if self.s.startswith(kw, self.i):
                self.i += len(kw)
                if cls is Sym:
                    text = str(self.dim())
                else:
                    j = self.s.index(")", self.i)
                    text = self.s[self.i:j]
                    self.i = j
                self.eat(")")
                return cls(text)
        m = _NUM.match(self.s, self.i)
        if m and (c.isdigit() or c in "-.") or self.s.startswith(("inf", "nan"), self.i):
            m = _NUM.match(self.s, self.i)
            self.i = m.end()
            t = m.group(0)
            return float(t) if any(ch in t for ch in ".eEna") else int(t)
        word = self.name()
        return {"true": True, "false": False, "none": None}.get(word, word if word in DTYPES else Enum(word))

    def args(self, close: str):
        pos, kw = [], {}
        if self.peek(close):
            return pos, kw
        while True:
            self.ws()
            m = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=").match(self.s, self.i)
            if m:
                self.i = m.end()
                kw[m.group(1)] = self.arg()
            else:
                if kw:
                    raise ParseError(f"{self.line}: positional argument after keyword")
                pos.append(self.arg())
            if not self.peek(","):
                return pos, kw
            self.eat(",")


def _skip_known_values(c) -> None:
    """A placeholder's or get_attr's stated contents (docs/ir.md `values [..]`, `kgroups G`): checked for form, not
    kept (the stand-in folds nothing on them)."""
    c.ws()
    m = re.compile(r"(values \[-?\d+(, -?\d+)*\]|kgroups \d+)").match(c.s, c.i)
    if m:
        c.i = m.end()


def parse(text: str):
    """Returns (nodes, outputs)."""
    nodes: list[Node] = []
    outputs = None
    lines = [(i + 1, ln.split("#", 1)[0].strip()) for i, ln in enumerate(text.splitlines())]
    lines = [(i, ln) for i, ln in lines if ln]
    if not lines or lines[0][1] != "graph {" or lines[-1][1] != "}":
        raise ParseError("expected 'graph {' ... '}'")
    for lineno, ln in lines[1:-1]:
        c = _Cursor(ln, lineno)
        if ln.startswith("output"):
            c.eat("output")
            c.eat("(")
            outputs, _ = c.args(")")
            c.eat(")")
            continue
        c.eat("%")
        name = c.name()
        c.eat(":")
        ty = c.type()
        c.eat("=")
        if c.peek("placeholder"):
            c.eat("placeholder")
            nodes.append(Node(name, ty, "placeholder"))
            _skip_known_values(c)
        elif c.peek("get_attr"):
            c.eat("get_attr")
            nodes.append(Node(name, ty, "get_attr", [c.string()]))
            _skip_known_values(c)
        else:
            target = c.name()
            c.eat("(")
            pos, kw = c.args(")")
            c.eat(")")
            nodes.append(Node(name, ty, target, pos, kw))
        c.ws()
        if c.i != len(c.s):
            raise ParseError(f"{lineno}:{c.i + 1}: trailing text {c.s[c.i:]!r}")
    if outputs is None:
        raise ParseError("missing output line")
    return nodes, outputs
