"""Messages: correlation to catch events and receive tasks, buffering, deduplication, time to
live, once per process, and correlation across partitions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from partita.processing.variable import state as variable_state
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.intents import (
    MessageIntent,
    MessageStartEventSubscriptionIntent,
    MessageSubscriptionIntent,
    ProcessMessageSubscriptionIntent,
)
from partita.protocol.routing import partition_for_correlation_key
from tests.support.harnesses import HARNESSES, make_harness
from tests.support.scenario_steps import create, deploy, publish, steps


def _waiting(engine: Any, order_id: str) -> int:
    instance = create(engine, "wait-payment", orderId=order_id)
    assert ("paid", "ELEMENT_ACTIVATED") in steps(engine, instance)
    return instance


def test_a_message_completes_a_catch_event_then_a_receive_task(engine: Any) -> None:
    deploy(engine, "message-catch.bpmn")
    instance = _waiting(engine, "o-1")
    opened = [r for r in engine.events(0) if r.intent is MessageSubscriptionIntent.CREATED]
    assert [(r.value.message_name, r.value.correlation_key) for r in opened] == [
        ("payment-received", "o-1")
    ]
    reply = publish(engine, "payment-received", "o-1", amount=10)
    assert reply.intent is MessageSubscriptionIntent.CORRELATING
    assert reply.value.process_instance_key == instance
    assert ("paid", "ELEMENT_COMPLETED") in steps(engine, instance)
    assert ("confirm", "ELEMENT_ACTIVATED") in steps(engine, instance)
    assert variable_state.local_variables(engine.dbs[0], instance)["amount"] == 10

    publish(engine, "order-confirmed", "o-1", confirmedBy="ann", noise=1)
    assert steps(engine, instance)[-1] == ("wait-payment", "ELEMENT_COMPLETED")
    intents = [r.intent for r in engine.events(0)]
    assert ProcessMessageSubscriptionIntent.CORRELATED in intents
    assert MessageSubscriptionIntent.CORRELATED in intents
    assert intents.count(ProcessMessageSubscriptionIntent.DELETED) == 2  # both closed
    assert intents.count(MessageSubscriptionIntent.DELETED) == 2
    triggers = [r.intent.name for r in engine.events(0) if r.value_type.name == "PROCESS_EVENT"]
    assert triggers == ["TRIGGERING", "TRIGGERED"] * 2


def test_a_buffered_message_correlates_when_the_subscription_opens(engine: Any) -> None:
    deploy(engine, "message-catch.bpmn")
    reply = publish(engine, "payment-received", "o-2", amount=3)
    assert reply.intent is MessageIntent.PUBLISHED  # buffered: nobody waits yet
    instance = _waiting(engine, "o-2")
    assert ("paid", "ELEMENT_COMPLETED") in steps(engine, instance)


def test_message_ids_deduplicate_until_the_message_expires(engine: Any) -> None:
    deploy(engine, "message-catch.bpmn")
    first = publish(engine, "payment-received", "o-3", ttl=60_000, message_id="m-1")
    assert first.intent is MessageIntent.PUBLISHED
    duplicate = publish(engine, "payment-received", "o-3", message_id="m-1")
    assert duplicate.rejection_type is RejectionType.ALREADY_EXISTS
    assert "message id 'm-1' is already published" in duplicate.rejection_reason
    assert publish(engine, "payment-received", "o-3").intent is MessageIntent.PUBLISHED  # no id

    engine.advance(61)
    expired = [r for r in engine.events(0) if r.intent is MessageIntent.EXPIRED]
    assert first.key in {r.key for r in expired}
    assert all(r.source_record_position == -1 for r in expired)
    again = publish(engine, "payment-received", "o-3", message_id="m-1")
    assert again.intent is MessageIntent.PUBLISHED  # the id is free after expiry


def test_a_message_with_no_time_to_live_correlates_now_or_never(engine: Any) -> None:
    deploy(engine, "message-catch.bpmn")
    reply = publish(engine, "payment-received", "o-4", ttl=0)
    assert reply.intent is MessageIntent.PUBLISHED
    assert [r.intent for r in engine.events(0) if r.key == reply.key] == [
        MessageIntent.PUBLISHED,
        MessageIntent.EXPIRED,
    ]
    instance = _waiting(engine, "o-4")
    assert ("paid", "ELEMENT_COMPLETED") not in steps(engine, instance)  # it was dropped


def test_a_message_correlates_once_per_process(engine: Any) -> None:
    deploy(engine, "message-catch.bpmn")
    first = _waiting(engine, "o-5")
    second = _waiting(engine, "o-5")
    publish(engine, "payment-received", "o-5")
    assert ("paid", "ELEMENT_COMPLETED") in steps(engine, first)
    assert ("paid", "ELEMENT_COMPLETED") not in steps(engine, second)
    publish(engine, "payment-received", "o-5")
    assert ("paid", "ELEMENT_COMPLETED") in steps(engine, second)


@pytest.fixture(params=HARNESSES)
def three(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    harness = make_harness(request, tmp_path, partitions=3)
    yield harness
    harness.assert_replay_matches(tmp_path)
    harness.close()


def test_correlation_across_partitions(three: Any) -> None:
    deploy(three, "message-catch.bpmn")
    key = next(
        k for k in (f"o-{i}" for i in range(100)) if partition_for_correlation_key(k, 3) == 2
    )
    instance = _waiting(three, key)  # the instance lives on partition 0
    assert [r.intent for r in three.events(2) if r.value_type.name == "MESSAGE_SUBSCRIPTION"] == [
        MessageSubscriptionIntent.CREATED
    ]
    reply = publish(three, "payment-received", key, amount=7)
    assert reply.partition_id == 3 and reply.intent is MessageSubscriptionIntent.CORRELATING
    assert ("paid", "ELEMENT_COMPLETED") in steps(three, instance)
    assert variable_state.local_variables(three.dbs[0], instance)["amount"] == 7
    correlate = [
        r
        for r in three.records(0)
        if r.record_type is RecordType.COMMAND
        and r.intent is ProcessMessageSubscriptionIntent.CORRELATE
    ]
    assert len(correlate) == 1 and json.loads(correlate[0].value.variables) == {"amount": 7}
    on_2 = [r.intent for r in three.events(2) if r.value_type.name == "MESSAGE_SUBSCRIPTION"]
    assert on_2[:3] == [
        MessageSubscriptionIntent.CREATED,
        MessageSubscriptionIntent.CORRELATING,
        MessageSubscriptionIntent.CORRELATED,
    ]


def test_message_start_events_listen_on_every_partition(three: Any) -> None:
    deploy(three, "starts.bpmn")
    for partition in range(3):
        created = [
            r
            for r in three.events(partition)
            if r.intent is MessageStartEventSubscriptionIntent.CREATED
        ]
        assert len(created) == 1, partition
    keys = [
        next(k for k in (f"c-{i}" for i in range(100)) if partition_for_correlation_key(k, 3) == p)
        for p in range(3)
    ]
    for partition, key in enumerate(keys):
        reply = publish(three, "order-placed", key)
        assert reply.intent is MessageStartEventSubscriptionIntent.CORRELATED
        assert reply.value.process_instance_key >> 51 == partition + 1  # started where it landed
