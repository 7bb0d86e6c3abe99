"""FXFUSE_* on/off switches, spelled as the C++ side reads them (codegen/env_flag.h): "1", "true", "yes",
"on" in any case turn one on; unset, empty, "0", "false", "no", "off" and anything else leave it off."""
from __future__ import annotations

import os


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
