"""Every engine factory the CLI, the tests and the benchmarks load builds without conflicting
registrations (a second processor for one intent is refused at build time)."""

from __future__ import annotations

import pytest

from partita.processing import Engine
from partita.protocol.intents import JobIntent
from partita.stream.worker import load_engine


@pytest.mark.parametrize(
    "spec",
    [
        "partita.processing.builtin:build_engine",
        "tests.support.processors:build_engine",
        "partita.bench.loop:bench_engine",
    ],
)
def test_engine_factories_build(spec: str) -> None:
    engine = load_engine(spec)
    assert engine.processors


def test_a_second_processor_for_one_intent_is_refused() -> None:
    engine = Engine()
    engine.processor(JobIntent.COMPLETE, lambda record, ctx: None)
    with pytest.raises(ValueError, match="already registered"):
        engine.processor(JobIntent.COMPLETE, lambda record, ctx: None)


def test_a_bad_engine_spec_says_what_is_expected() -> None:
    from partita.errors import PartitaError

    with pytest.raises(PartitaError, match="expected MODULE:FUNCTION"):
        load_engine("no.such.module:build")
