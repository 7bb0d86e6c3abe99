"""How fxfuse._C is linked. A compiler that links libstdc++ statically (the GPU machine's
/opt/gcc wrapper does) leaves a second libstdc++ inside _C; if its symbols are exported, the
loader binds part of them to the system copy torch loaded, and writing a number to an ostream
(any TORCH_CHECK message with a size in it) crashes. runtime/CMakeLists.txt links _C with
--exclude-libs,ALL so a static copy stays private; this checks the result, whichever toolchain
built the extension."""
from __future__ import annotations

import shutil
import subprocess

import pytest

fxfuse = pytest.importorskip("fxfuse", reason="fxfuse._C is not built")

# Defined only inside libstdc++ itself (not template code a header instantiates in _C).
LIBSTDCXX_ONLY = ("_ZNSt6locale7classicEv",        # std::locale::classic()
                  "_ZNSo9_M_insertIlEERSoT_",      # std::ostream::_M_insert<long>
                  "_ZNSt8ios_base4InitC1Ev")       # std::ios_base::Init::Init()


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} (binutils) is needed to inspect the extension"
    return path


def test_no_libstdcxx_copy_exported_from_extension():
    so = fxfuse._C.__file__
    if not so.endswith(".so"):  # tests/python's stand-in module when the extension is not built
        pytest.skip(f"fxfuse._C is not the built extension ({so})")
    needed = subprocess.run([_tool("readelf"), "-d", so], capture_output=True, text=True, check=True).stdout
    exported = set(subprocess.run([_tool("nm"), "-D", "--defined-only", so], capture_output=True, text=True,
                                  check=True).stdout.split())
    leaked = [s for s in LIBSTDCXX_ONLY if s in exported]
    assert not leaked, (f"{so} exports libstdc++'s own symbols {leaked}: libstdc++ is linked in statically "
                        f"and visible (NEEDED: {'libstdc++' in needed}); link with --exclude-libs,ALL")
