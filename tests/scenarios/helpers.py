"""Helpers of the engine-core scenarios: create instances, find and complete jobs, send
commands, and read an instance's element lifecycle."""

from __future__ import annotations

import json
from pathlib import Path

from engine.protocol.intents import (
    JobIntent,
    ProcessInstanceCreationIntent,
)
from engine.protocol.records import Record, command
from engine.protocol.values import (
    JobValue,
    ProcessInstanceCreationValue,
)
from tests.support.memory import MemoryEngine

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bpmn"


def create(engine: MemoryEngine, process_id: str, **variables: object) -> int:
    value = ProcessInstanceCreationValue(
        bpmn_process_id=process_id, variables=json.dumps(variables)
    )
    position = engine.send(0, command(ProcessInstanceCreationIntent.CREATE, value))
    engine.run()
    created = [
        r
        for r in engine.results_of(0, position)
        if r.intent is ProcessInstanceCreationIntent.CREATED
    ]
    assert created, engine.results_of(0, position)
    return created[0].key


def jobs_of(engine: MemoryEngine, instance: int) -> list[Record]:
    created = [
        r
        for r in engine.events(0)
        if r.intent is JobIntent.CREATED and r.value.process_instance_key == instance
    ]
    done = {r.key for r in engine.events(0) if r.intent is JobIntent.COMPLETED}
    return [j for j in created if j.key not in done]


def complete(engine: MemoryEngine, job: Record, **variables: object) -> list[Record]:
    position = engine.send(
        0, command(JobIntent.COMPLETE, JobValue(variables=json.dumps(variables)), key=job.key)
    )
    engine.run()
    return engine.results_of(0, position)


def lifecycle(engine: MemoryEngine, instance: int) -> list[tuple[str, str]]:
    return [
        (r.value.element_id, r.intent.name)
        for r in engine.events(0)
        if r.value_type.name == "PROCESS_INSTANCE" and r.value.process_instance_key == instance
    ]


def send(engine: MemoryEngine, record: Record) -> list[Record]:
    position = engine.send(0, record)
    engine.run()
    return engine.results_of(0, position)
