"""Hypothesis profiles of the fuzz tests.

- `ci` (the default): a fixed number of examples, derandomized so a CI run is reproducible, no
  deadline (the machine is shared; hangs are caught by explicit time limits instead).
- `long`: thousands of examples with fresh randomness, for a hunt before a release:

      HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz -q

The profile only applies to the tests of this package (`tests.fuzz.fuzz_settings`); the rest of
the suite keeps its own settings.
"""

from __future__ import annotations

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
