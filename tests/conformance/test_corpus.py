"""Every case of the conformance corpus, on the in-memory log and on the real broker, each
ending with replay rebuilding the same state; and the coverage matrix in docs/coverage.md is
the one the corpus generates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.coverage import matrix
from tests.support import conformance_corpus as corpus
from tests.support.harnesses import HARNESSES, make_harness
from tests.support.paths import ROOT

DOC = ROOT / "docs" / "coverage.md"


@pytest.fixture(params=HARNESSES)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    engine = make_harness(request, tmp_path, partitions=1)
    yield engine
    engine.assert_replay_matches(tmp_path)
    engine.close()


@pytest.mark.parametrize("case", corpus.cases(), ids=lambda c: c.name)
def test_case(harness: Any, case: corpus.Case) -> None:
    corpus.run_case(harness, case)


def test_the_corpus_is_large_enough() -> None:
    assert len(list(corpus.BPMN.glob("*.bpmn"))) >= 30
    used = {name for case in corpus.cases() for name in case.files}
    unused = sorted(p.name for p in corpus.BPMN.glob("*.bpmn") if p.name not in used)
    assert not unused, f"BPMN files no case runs: {unused}"


def test_the_coverage_matrix_is_current() -> None:
    assert DOC.read_text() == matrix(), (
        "docs/coverage.md is stale: run `python -m tests.conformance.coverage > docs/coverage.md`"
    )
