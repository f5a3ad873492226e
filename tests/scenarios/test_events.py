"""Boundary events (message and timer, interrupting and not), timer catch events and cycles,
the event-based gateway, and message and timer start events with version replacement."""

from __future__ import annotations

from typing import Any

from partita.processing.variable import state as variable_state
from partita.protocol.enums import RejectionType
from partita.protocol.intents import (
    JobIntent,
    MessageIntent,
    MessageStartEventSubscriptionIntent,
    ProcessInstanceCreationIntent,
    ProcessMessageSubscriptionIntent,
    TimerIntent,
)
from partita.protocol.records import command
from partita.protocol.values import ProcessInstanceCreationValue
from tests.support.paths import BPMN_FIXTURES
from tests.support.scenario_steps import (
    all_events,
    complete,
    create,
    deploy,
    jobs_of,
    publish,
    send,
    steps,
)


def _timers(engine: Any, intent: TimerIntent, target: str) -> list[Any]:
    return [
        r for r in all_events(engine) if r.intent is intent and r.value.target_element_id == target
    ]


def test_boundary_events_run_beside_or_instead_of_their_task(engine: Any) -> None:
    deploy(engine, "boundaries.bpmn")
    instance = create(engine, "with-boundaries", orderId="o-9", deadline="PT1H")
    (job,) = jobs_of(engine, instance)
    assert len(_timers(engine, TimerIntent.CREATED, "too-late")) == 1

    publish(engine, "customer-note", "o-9", note="ring twice")  # non-interrupting
    assert ("note-end", "ELEMENT_COMPLETED") in steps(engine, instance)
    assert ("pack", "ELEMENT_TERMINATED") not in steps(engine, instance)
    assert jobs_of(engine, instance) == [job]  # the task goes on

    engine.advance(10)  # the reminder cycle R2/PT10S: twice, beside the task
    engine.advance(10)
    engine.advance(10)
    assert steps(engine, instance).count(("remind-end", "ELEMENT_COMPLETED")) == 2
    assert len(_timers(engine, TimerIntent.TRIGGERED, "reminder")) == 2
    assert len(_timers(engine, TimerIntent.CREATED, "reminder")) == 2  # no third

    publish(engine, "cancel-order", "o-9", reason="changed mind")  # interrupting
    lifecycle = steps(engine, instance)
    assert ("pack", "ELEMENT_TERMINATED") in lifecycle
    assert ("cancel-end", "ELEMENT_COMPLETED") in lifecycle
    assert lifecycle[-1] == ("with-boundaries", "ELEMENT_COMPLETED")
    assert [r.intent for r in all_events(engine) if r.key == job.key][-1] is JobIntent.CANCELED
    assert len(_timers(engine, TimerIntent.CANCELED, "too-late")) == 1
    deleted = [
        r for r in all_events(engine) if r.intent is ProcessMessageSubscriptionIntent.DELETED
    ]
    assert sorted(r.value.message_name for r in deleted) == ["cancel-order", "customer-note"]
    (answer,) = complete(engine, job)  # the job went with its task
    assert answer.rejection_type is RejectionType.NOT_FOUND


def test_an_interrupting_timer_boundary_with_a_feel_duration(engine: Any) -> None:
    deploy(engine, "boundaries.bpmn")
    instance = create(engine, "with-boundaries", orderId="o-10", deadline="PT30S")
    (created,) = _timers(engine, TimerIntent.CREATED, "too-late")
    assert created.value.due_date == created.timestamp + 30_000
    engine.advance(31)
    lifecycle = steps(engine, instance)
    assert ("pack", "ELEMENT_TERMINATED") in lifecycle and (
        "late-end",
        "ELEMENT_COMPLETED",
    ) in lifecycle
    assert lifecycle[-1] == ("with-boundaries", "ELEMENT_COMPLETED")
    assert _timers(engine, TimerIntent.CANCELED, "reminder")  # the other timers went too


def test_a_bad_timer_value_is_an_incident(engine: Any) -> None:
    deploy(engine, "boundaries.bpmn")
    instance = create(engine, "with-boundaries", orderId="o-11", deadline="soon")
    incidents = [r for r in all_events(engine) if r.value_type.name == "INCIDENT"]
    assert incidents and "too-late" in incidents[0].value.error_message
    assert "not an ISO-8601 duration" in incidents[0].value.error_message
    assert jobs_of(engine, instance) == []  # nothing opened, no job


def test_the_event_based_gateway_takes_the_first_event(engine: Any) -> None:
    deploy(engine, "timers.bpmn")
    approved = create(engine, "wait-or-timeout", requestId="r-1")
    engine.advance(10)  # the PT10S pause
    assert ("decide", "ELEMENT_ACTIVATED") in steps(engine, approved)
    publish(engine, "approved", "r-1", by="boss")
    lifecycle = steps(engine, approved)
    assert ("got-approval", "ELEMENT_COMPLETED") in lifecycle
    assert ("gave-up", "ELEMENT_ACTIVATING") not in lifecycle
    assert lifecycle[-1] == ("wait-or-timeout", "ELEMENT_COMPLETED")
    assert _timers(engine, TimerIntent.CANCELED, "gave-up")

    timed_out = create(engine, "wait-or-timeout", requestId="r-2")
    engine.advance(10)
    engine.advance(60)
    lifecycle = steps(engine, timed_out)
    assert ("gave-up", "ELEMENT_COMPLETED") in lifecycle
    assert lifecycle[-1] == ("wait-or-timeout", "ELEMENT_COMPLETED")
    assert publish(engine, "approved", "r-2").intent is MessageIntent.PUBLISHED  # nobody waits


def test_timer_start_events_fire_their_cycle(engine: Any) -> None:
    deploy(engine, "timers.bpmn")
    for _ in range(4):
        engine.advance(60)
    started = [
        r
        for r in all_events(engine)
        if r.value_type.name == "PROCESS_INSTANCE"
        and r.value.bpmn_process_id == "ticker"
        and r.intent.name == "ELEMENT_COMPLETED"
        and r.value.element_id == "ticker"
    ]
    assert len(started) == 3  # R3
    assert len(_timers(engine, TimerIntent.TRIGGERED, "tick")) == 3


def test_message_start_events_follow_the_latest_version(engine: Any) -> None:
    deploy(engine, "starts.bpmn")
    reply = publish(engine, "order-placed", "c-1", item="book")
    assert reply.intent is MessageStartEventSubscriptionIntent.CORRELATED
    first = reply.value.process_instance_key
    assert steps(engine, first)[:4] == [
        ("started-by-message", "ELEMENT_ACTIVATING"),
        ("started-by-message", "ELEMENT_ACTIVATED"),
        ("order-placed", "ELEMENT_ACTIVATING"),
        ("order-placed", "ELEMENT_ACTIVATED"),
    ]
    (job,) = jobs_of(engine, first)
    assert job.value.type == "handle-order"
    assert variable_state.local_variables(engine.dbs[0], first) == {"item": "book"}

    again = publish(engine, "order-placed", "c-1", item="pen")
    assert again.intent is MessageIntent.PUBLISHED  # c-1 already has an active instance
    complete(engine, job)
    assert steps(engine, first)[-1] == ("started-by-message", "ELEMENT_COMPLETED")
    second = publish(engine, "order-placed", "c-1", item="cup").value.process_instance_key
    assert second != first

    version_2 = (BPMN_FIXTURES / "starts.bpmn").read_bytes().replace(b'"handle-order"', b'"v2"')
    deploy(engine, "starts.bpmn", content={"starts.bpmn": version_2})
    subscriptions = [
        r.intent
        for r in all_events(engine)
        if r.value_type.name == "MESSAGE_START_EVENT_SUBSCRIPTION"
    ]
    assert subscriptions.count(MessageStartEventSubscriptionIntent.DELETED) == 1
    third = publish(engine, "order-placed", "c-2").value
    assert third.process_definition_key != reply.value.process_definition_key
    assert jobs_of(engine, third.process_instance_key)[0].value.type == "v2"

    none_start = version_2.replace(b'<bpmn:messageEventDefinition messageRef="placed" />', b"")
    deploy(engine, "starts.bpmn", content={"starts.bpmn": none_start})
    assert publish(engine, "order-placed", "c-3").intent is MessageIntent.PUBLISHED  # no start


def test_creating_an_instance_of_a_message_started_process_is_rejected(engine: Any) -> None:
    deploy(engine, "starts.bpmn")
    value = ProcessInstanceCreationValue(bpmn_process_id="started-by-message")
    (rejected,) = send(engine, command(ProcessInstanceCreationIntent.CREATE, value))
    assert rejected.rejection_type is RejectionType.INVALID_ARGUMENT
    assert "starts by a message or a timer" in rejected.rejection_reason
