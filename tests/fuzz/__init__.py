"""Property-based fuzzing of every input the engine accepts: the record codec, BPMN resources,
FEEL expressions and commands. The hypothesis profile is chosen with HYPOTHESIS_PROFILE (`ci` by
default, `long` for thousands of examples); see conftest.py."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")


def fuzz_settings(**overrides: Any) -> settings:
    """The selected profile, with per-test `overrides` (e.g. a smaller `max_examples` for an
    expensive test). Scales example counts of the `long` profile proportionally."""
    base = settings.get_profile(PROFILE)
    if "max_examples" in overrides and PROFILE != "ci":
        ci = settings.get_profile("ci").max_examples
        overrides["max_examples"] = max(1, overrides["max_examples"] * base.max_examples // ci)
    return settings(base, **overrides)
