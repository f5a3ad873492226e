"""Multi-instance activities: parallel and sequential, input and output collections, the
completion condition, subprocess bodies with boundary events, empty and invalid collections."""

from __future__ import annotations

import json
from typing import Any

from partita.processing.variable import state as variable_state
from partita.protocol.enums import ErrorType
from partita.protocol.intents import IncidentIntent, JobIntent, TimerIntent
from partita.protocol.records import command
from partita.protocol.values import JobValue
from tests.support.scenario_steps import all_events, complete, create, deploy, jobs_of, steps


def _variables(engine: Any, job: Any) -> dict[str, Any]:
    return variable_state.visible_variables(engine.dbs[0], job.value.element_instance_key)


def test_parallel_instances_collect_their_output_in_order(engine: Any) -> None:
    deploy(engine, "multi-instance.bpmn")
    instance = create(engine, "mi-parallel", items=["a", "b", "c"])
    jobs = jobs_of(engine, instance)
    assert len(jobs) == 3
    seen = {_variables(engine, j)["item"]: (j, _variables(engine, j)["loopCounter"]) for j in jobs}
    assert {item: counter for item, (_, counter) in seen.items()} == {"a": 1, "b": 2, "c": 3}
    for item in ("c", "a", "b"):  # out of order
        complete(engine, seen[item][0], shipped=item.upper())
    lifecycle = steps(engine, instance)
    assert lifecycle.count(("ship", "ELEMENT_COMPLETED")) == 4  # 3 inner + the body
    assert lifecycle[-1] == ("mi-parallel", "ELEMENT_COMPLETED")
    results = [
        json.loads(r.value.value)
        for r in engine.events(0)
        if r.value_type.name == "VARIABLE"
        and r.value.name == "results"
        and r.value.scope_key == instance
    ]
    assert results == [["A", "B", "C"]]


def test_sequential_instances_run_one_after_another(engine: Any) -> None:
    deploy(engine, "multi-instance.bpmn")
    instance = create(engine, "mi-sequential", steps=[10, 20, 30])
    for expected in (10, 20, 30):
        (job,) = jobs_of(engine, instance)
        assert _variables(engine, job)["step"] == expected
        complete(engine, job)
    assert steps(engine, instance)[-1] == ("mi-sequential", "ELEMENT_COMPLETED")


def test_the_completion_condition_ends_the_rest(engine: Any) -> None:
    deploy(engine, "multi-instance.bpmn")
    instance = create(engine, "mi-condition")
    jobs = jobs_of(engine, instance)
    assert len(jobs) == 4
    complete(engine, jobs[0])
    assert len(jobs_of(engine, instance)) == 3
    complete(engine, jobs[1])
    lifecycle = steps(engine, instance)
    assert lifecycle.count(("vote", "ELEMENT_TERMINATED")) == 2
    assert lifecycle[-1] == ("mi-condition", "ELEMENT_COMPLETED")
    cancelled = [r for r in all_events(engine) if r.intent is JobIntent.CANCELED]
    assert {r.key for r in cancelled} == {jobs[2].key, jobs[3].key}


def test_a_boundary_timer_on_a_multi_instance_subprocess(engine: Any) -> None:
    deploy(engine, "multi-instance.bpmn")
    instance = create(engine, "mi-subprocess", parcels=["p1", "p2"])
    assert len(jobs_of(engine, instance)) == 2
    assert len([r for r in all_events(engine) if r.intent is TimerIntent.CREATED]) == 1  # body only
    complete(engine, jobs_of(engine, instance)[0])
    engine.advance(61)
    lifecycle = steps(engine, instance)
    assert ("per-parcel", "ELEMENT_TERMINATED") in lifecycle
    assert ("timeout-end", "ELEMENT_COMPLETED") in lifecycle
    assert lifecycle[-1] == ("mi-subprocess", "ELEMENT_COMPLETED")


def test_empty_and_invalid_collections(engine: Any) -> None:
    deploy(engine, "multi-instance.bpmn")
    empty = create(engine, "mi-parallel", items=[])
    assert steps(engine, empty)[-1] == ("mi-parallel", "ELEMENT_COMPLETED")
    assert jobs_of(engine, empty) == []
    create(engine, "mi-parallel", items="not a list")
    (incident,) = [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.EXTRACT_VALUE_ERROR
    assert "must be a list, but it is str" in incident.value.error_message


def test_a_large_collection_spills_over_batches_and_completes(engine: Any) -> None:
    deploy(engine, "multi-instance.bpmn")
    items = list(range(400))  # more inner activations than one batch processes
    instance = create(engine, "mi-sequential", steps=[0])  # warm-up: the process is deployed
    complete(engine, jobs_of(engine, instance)[0])
    instance = create(engine, "mi-parallel", items=items)
    spilled = [
        r
        for r in engine.records(0)
        if r.record_type.name == "COMMAND" and r.intent.name == "ACTIVATE_ELEMENT"
    ]
    assert spilled  # follow-ups beyond the batch budget were written to the log as commands
    jobs = jobs_of(engine, instance)
    assert len(jobs) == 400
    for job in jobs:  # all answers first, then one run: the batches stay full
        item = _variables(engine, job)["item"]
        value = JobValue(variables=json.dumps({"shipped": item * 2}))
        engine.send(0, command(JobIntent.COMPLETE, value, key=job.key))
    engine.run()
    assert steps(engine, instance)[-1] == ("mi-parallel", "ELEMENT_COMPLETED")
    (results,) = [
        json.loads(r.value.value)
        for r in engine.events(0)
        if r.value_type.name == "VARIABLE"
        and r.value.name == "results"
        and r.value.scope_key == instance
    ]
    assert results == [2 * i for i in items]
