"""Fixed regression cases: every failure the differential test found, minimized.

Each entry: a short name, the bug it caught (see the report of issue 8), the route through
fxfuse that showed it, and the case as the generator's JSON (``Case.from_json``): the source
is printed on failure. Add new ones at the end; never edit an old one.
"""
from __future__ import annotations

import pytest

from chain_generator import Case
from diff_harness import check_case, describe

fxfuse = pytest.importorskip("fxfuse", reason="fxfuse._C is not built")

# name -> (route, bug, case json)
REGRESSIONS: dict[str, tuple[str, str, str]] = {
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS) or [pytest.param("none", marks=pytest.mark.skip("no regressions yet"))])
def test_regression(name):
    route, bug, text = REGRESSIONS[name]
    case = Case.from_json(text)
    o = check_case(case, route, "cpu")
    assert o.ok, f"{name} ({bug}):\n{describe(case, o, route)}"
