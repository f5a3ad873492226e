"""Commands that fell due join the consumed batch: one transaction, and the due-date checkers
see what the batch's own commands changed (the real engine on the in-memory log)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from partita.processing.builtin import build_engine
from partita.protocol.enums import RecordType
from partita.protocol.intents import DeploymentIntent, JobBatchIntent, JobIntent
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from partita.protocol.records import Record, command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    JobBatchValue,
    JobValue,
    ProcessInstanceCreationValue,
)
from tests.support.memory import CODEC, MemoryEngine
from tests.support.paths import BPMN_FIXTURES


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    harness = MemoryEngine(build_engine(), tmp_path, partitions=1)
    bpmn = (BPMN_FIXTURES / "one-task.bpmn").read_bytes()
    resources = (DeploymentResource("one-task.bpmn", bpmn),)
    harness.send(0, command(DeploymentIntent.CREATE, DeploymentValue(resources=resources)))
    harness.run()
    yield harness
    harness.assert_replay_matches(tmp_path)
    harness.close()


def _activated_job(engine: MemoryEngine, timeout_ms: int) -> int:
    value = ProcessInstanceCreationValue(bpmn_process_id="one-task", variables="{}")
    engine.send(0, command(Creation.CREATE, value))
    engine.send(0, command(JobBatchIntent.ACTIVATE, JobBatchValue("work", "w", timeout_ms, 1)))
    engine.run()
    (batch,) = [r for r in engine.events(0) if r.intent is JobBatchIntent.ACTIVATED]
    return batch.value.job_keys[0]


def _batch(engine: MemoryEngine, *commands: Record) -> list[list[Record]]:
    """Send `commands` and process them as one consumed batch whose due-date check runs the
    engine's checkers; the records each transaction wrote."""
    machine, db = engine.machines[0], engine.dbs[0]
    producer: Any = machine.transaction.producer
    transactions: list[list[Record]] = []
    commit = producer.commit_transaction

    def recording_commit(*args: Any) -> None:
        transactions.append([CODEC.decode(p[2]) for p in producer.pending if p[0] == engine.TOPIC])
        commit(*args)

    producer.commit_transaction = recording_commit
    for record in commands:
        engine.send(0, record)
    pending = engine.kafka.log(engine.TOPIC, 0)[machine.next_offset :]
    now_ms = int(engine.now * 1000)
    checks: list[int] = []

    def due_check() -> list[Record]:
        checks.append(now_ms)
        return [due for checker in engine.engine.due_date_checkers for due in checker(db, now_ms)]

    machine.process(pending, due_check=due_check)
    producer.commit_transaction = commit
    engine.run()
    assert checks == [now_ms]  # once, after the batch's commands
    return transactions


def test_a_command_that_fell_due_is_processed_in_the_consumed_batch(
    engine: MemoryEngine,
) -> None:
    job = _activated_job(engine, timeout_ms=1_000)
    engine.now += 2
    create = ProcessInstanceCreationValue(bpmn_process_id="one-task", variables="{}")
    (transaction,) = _batch(engine, command(Creation.CREATE, create))
    intents = [(r.record_type, r.intent) for r in transaction]
    assert (RecordType.EVENT, Creation.CREATED) in intents  # the consumed command's events
    timed_out = [r for r in transaction if r.intent is JobIntent.TIMED_OUT]  # and what fell due
    assert [r.key for r in timed_out] == [job]


def test_the_due_date_check_sees_what_the_batch_did(engine: MemoryEngine) -> None:
    """The job completes in the batch its deadline passed in: no TIME_OUT command, so no
    rejection of one either."""
    job = _activated_job(engine, timeout_ms=1_000)
    engine.now += 2
    complete = command(JobIntent.COMPLETE, JobValue(variables=json.dumps({"ok": 1})), key=job)
    (transaction,) = _batch(engine, complete)
    assert JobIntent.COMPLETED in [r.intent for r in transaction]
    assert not [r for r in engine.records(0) if r.intent is JobIntent.TIMED_OUT]
    assert not [r for r in engine.records(0) if r.record_type is RecordType.COMMAND_REJECTION]
