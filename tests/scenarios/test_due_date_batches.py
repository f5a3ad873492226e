"""Due-date checkers are capped per run: work that falls due all at once (thousands of timers,
expired messages) is done over several runs of at most MAX_DUE_COMMANDS commands each, the
earliest first, and none is lost."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.processing.builtin import build_engine
from partita.processing.dispatch import MAX_DUE_COMMANDS
from partita.processing.message.processors import expired_messages
from partita.processing.timer.processors import due_timers
from partita.protocol.enums import RecordType
from partita.protocol.intents import (
    MessageIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    TimerIntent,
)
from partita.protocol.records import command
from partita.protocol.values import MessageValue, ProcessInstanceCreationValue
from tests.support.memory import MemoryEngine
from tests.support.scenario_steps import deploy


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    harness = MemoryEngine(build_engine(), tmp_path, partitions=1)
    yield harness
    harness.assert_replay_matches(tmp_path)
    harness.close()


def _count(engine: MemoryEngine, intent: object) -> int:
    return sum(1 for r in engine.events(0) if r.intent is intent)


def _runs_until_quiet(engine: MemoryEngine, intent: object) -> list[int]:
    """Run every checker once per round, as the partition's task does, until a round finds
    nothing due; how many `intent` events each round produced."""
    produced = []
    before = _count(engine, intent)
    while True:
        engine.advance(0)
        after = _count(engine, intent)
        if after == before:
            return produced
        produced.append(after - before)
        before = after


def test_timers_due_at_once_fire_over_capped_runs(engine: MemoryEngine) -> None:
    deploy(engine, "timer-catch.bpmn")
    for n in range(2_500):
        wait = "PT1M" if n % 2 else "PT59S"  # half due a second earlier: those go first
        value = ProcessInstanceCreationValue(
            bpmn_process_id="sleepy", variables=json.dumps({"wait": wait})
        )
        engine.send(0, command(ProcessInstanceCreationIntent.CREATE, value))
    engine.run()
    assert _count(engine, TimerIntent.CREATED) == 2_500

    engine.now += 61
    first = list(due_timers(engine.dbs[0], int(engine.now * 1000)))
    assert len(first) == MAX_DUE_COMMANDS == 1000
    assert all(c.record_type is RecordType.COMMAND for c in first)
    early = {
        r.key
        for r in engine.events(0)
        if r.intent is TimerIntent.CREATED and r.value.due_date < (engine.now - 1.5) * 1000
    }
    assert len(early) == 1_250
    assert {c.key for c in first} <= early  # the earliest due first

    assert _runs_until_quiet(engine, TimerIntent.TRIGGERED) == [1000, 1000, 500]
    triggered = [r.key for r in engine.events(0) if r.intent is TimerIntent.TRIGGERED]
    assert len(set(triggered)) == 2_500  # each timer once
    completed = [
        r
        for r in engine.events(0)
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED and r.value.element_id == "sleepy"
    ]
    assert len(completed) == 2_500
    assert due_timers(engine.dbs[0], int(engine.now * 1000)) == []


def test_expired_messages_go_over_capped_runs(engine: MemoryEngine) -> None:
    for n in range(1_500):
        value = MessageValue(name="ping", correlation_key=f"k-{n}", time_to_live=1_000)
        engine.send(0, command(MessageIntent.PUBLISH, value))
    engine.run()
    assert _count(engine, MessageIntent.PUBLISHED) == 1_500

    engine.now += 2
    assert len(list(expired_messages(engine.dbs[0], int(engine.now * 1000)))) == 1000
    assert _runs_until_quiet(engine, MessageIntent.EXPIRED) == [1000, 500]
    expired = {r.key for r in engine.events(0) if r.intent is MessageIntent.EXPIRED}
    published = {r.key for r in engine.events(0) if r.intent is MessageIntent.PUBLISHED}
    assert expired == published
