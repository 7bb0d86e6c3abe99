"""The ``expect`` lines of a chain spec (docs/spec.md): facts about op inputs that no value reads (GPTQ's shift
table ``wf`` and group index ``g_idx``) but that the pass relied on when it folded the chain. The op checks them
before computing and raises when one does not hold, so inputs made up for a spec (the autotune's random ones)
must hold them: ``fill_expects`` writes each fact into its input."""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Expect", "parse_expects", "expected_tensor", "fill_expects"]

_DTYPES = {"i8": torch.int8, "u8": torch.uint8, "i32": torch.int32, "i64": torch.int64}


@dataclass(frozen=True)
class Expect:
    slot: int
    dtype: torch.dtype
    kind: str                # "values" or "kgroups"
    sizes: tuple[int, ...]   # values: the tensor's sizes (() for 0-d); kgroups: ()
    values: tuple[int, ...]  # values: row-major; kgroups: ()
    kgroup: int = 0          # kgroups: the gemm line's kgroup G (element k is k // G)


def parse_expects(spec: str) -> list[Expect]:
    """The spec's expect lines (a spec the op accepted: the C++ parser validates them)."""
    kgroup, out = 0, []
    for line in spec.splitlines():
        tok = line.split()
        if len(tok) == 4 and tok[0] == "gemm" and tok[2] == "kgroup":
            kgroup = int(tok[3])
        if len(tok) < 5 or tok[0] != "expect":
            continue
        slot, dtype, dims, kind = int(tok[1]), _DTYPES[tok[2]], tok[3].strip("[]"), tok[4]
        if kind == "kgroups":
            out.append(Expect(slot, dtype, kind, (), (), kgroup))
        else:
            sizes = tuple(int(s) for s in dims.split(",")) if dims else ()
            out.append(Expect(slot, dtype, kind, sizes, tuple(int(v) for v in tok[5:])))
    return out


def expected_tensor(e: Expect, K: int = 0, device: torch.device | str = "cpu") -> torch.Tensor:
    """A contiguous tensor that holds the fact (``K``: the problem's, for kgroups)."""
    if e.kind == "kgroups":
        return torch.div(torch.arange(K, device=device), e.kgroup, rounding_mode="floor").to(e.dtype)
    return torch.tensor(e.values, dtype=torch.int64, device=device).reshape(e.sizes).to(e.dtype)


def fill_expects(inputs: list[torch.Tensor], spec: str) -> list[torch.Tensor]:
    """``inputs`` (the op's, real tensors) with each expect line's input made to hold its fact, in place (its
    shape, strides and storage offset kept: the op keys its call sites by them). Returned for chaining."""
    for e in parse_expects(spec):
        t = inputs[e.slot]
        t.copy_(expected_tensor(e, t.shape[0] if e.kind == "kgroups" and t.dim() == 1 else 0, t.device)
                .reshape(t.shape))
    return inputs
