"""Steps of the task listener scenarios (tests/scenarios/test_task_listeners*.py): an instance
of tests/conformance/bpmn/task-listeners.bpmn, its listener jobs and their results, its user
task's events, and user task commands sent with a reply address."""

from __future__ import annotations

import json
import uuid
from typing import Any

from partita.protocol.headers import ReplyTo
from partita.protocol.intents import JobIntent
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import Record, command
from partita.protocol.values import JobValue, UserTaskValue
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, create, deploy, jobs_of, send

LISTENERS = (CONFORMANCE / "bpmn" / "task-listeners.bpmn").read_bytes()


def start(engine: Any, **variables: object) -> int:
    deploy(engine, "tl.bpmn", content={"tl.bpmn": LISTENERS})
    return create(engine, "task-listeners", **({"owner": "ann", "stage": "final"} | variables))


def job(engine: Any, instance: int, job_type: str) -> Record:
    """The one job of `job_type` of `instance`."""
    (found,) = [j for j in jobs_of(engine, instance) if j.value.type == job_type]
    return found


def finish(engine: Any, job: Record, result: dict[str, Any] | None = None) -> list[Record]:
    value = JobValue(result=json.dumps(result) if result is not None else "")
    return send(engine, command(JobIntent.COMPLETE, value, key=job.key))


def task_steps(engine: Any, instance: int) -> list[str]:
    return [
        r.intent.name
        for r in all_events(engine)
        if r.value_type.name == "USER_TASK" and r.value.process_instance_key == instance
    ]


def created(engine: Any, instance: int) -> int:
    """An instance whose task is created and assigned to ann, its listeners done: the task key."""
    finish(engine, job(engine, instance, "tl-create"))
    finish(engine, job(engine, instance, "tl-assign"))
    (task,) = {
        r.key
        for r in all_events(engine)
        if r.intent is Task.CREATED and r.value.process_instance_key == instance
    }
    return task


def ask(engine: Any, intent: Task, key: int, value: UserTaskValue) -> tuple[bytes, list[Record]]:
    """Send a user task command with a reply address: its correlation id and its results."""
    correlation = uuid.uuid4().hex.encode()
    position = engine.send(
        0, command(intent, value, key=key), reply=ReplyTo(engine.REPLIES, 0, correlation)
    )
    engine.run()
    return correlation, engine.results_of(0, position)


def replies(engine: Any, correlation: bytes) -> list[Record]:
    return [r for c, r in engine.replies() if c == correlation]
