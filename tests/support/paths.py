"""Where the repository's files are, for the tests that read them: named once here, so moving a
test to another folder never changes what its paths point at."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root (the checkout)."""

ENGINE = ROOT / "engine" / "partita"
"""The source of the import package `partita`."""

EXAMPLES = ROOT / "examples"
"""The example programs (Java, Node.js) and their BPMN."""

TESTS = ROOT / "tests"

BPMN_FIXTURES = TESTS / "fixtures" / "bpmn"
"""The BPMN files the tests deploy."""

STATE_FIXTURES = TESTS / "fixtures" / "state"
"""Stores older builds wrote, for the migration tests."""

CONFORMANCE = TESTS / "conformance"
"""The BPMN conformance corpus: `cases/` and the `bpmn/` files they name."""
