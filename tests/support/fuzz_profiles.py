"""Hypothesis profiles of the fuzz tests (tests/fuzz), and `fuzz_settings`, which they use.

- `ci` (the default): a fixed number of examples, derandomized so a CI run is reproducible, no
  deadline (the machine is shared; hangs are caught by explicit time limits instead).
- `long`: thousands of examples with fresh randomness, for a hunt before a release:

      HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz -q

The profile only applies to the tests that ask for it through `fuzz_settings`; the rest of the
suite keeps its own settings.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=5_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")


def fuzz_settings(**overrides: Any) -> settings:
    """The selected profile, with per-test `overrides` (e.g. a smaller `max_examples` for an
    expensive test). Scales example counts of the `long` profile proportionally."""
    base = settings.get_profile(PROFILE)
    if "max_examples" in overrides and PROFILE != "ci":
        ci = settings.get_profile("ci").max_examples
        overrides["max_examples"] = max(1, overrides["max_examples"] * base.max_examples // ci)
    return settings(base, **overrides)
