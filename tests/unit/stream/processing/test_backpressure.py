"""Backpressure decides which commands a partition over its limits refuses, and says why."""

from __future__ import annotations

import pytest

from partita.protocol.enums import ValueType
from partita.protocol.intents import (
    INTENTS_BY_VALUE_TYPE,
    Intent,
    JobIntent,
    MessageIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
)
from partita.stream.processing.backpressure import Backpressure, applies_to

NEW_WORK = {
    (ValueType.PROCESS_INSTANCE_CREATION, ProcessInstanceCreationIntent.CREATE),
    (
        ValueType.PROCESS_INSTANCE_CREATION,
        ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
    ),
    (ValueType.MESSAGE, MessageIntent.PUBLISH),
}

EVERY_COMMAND = [
    (value_type, intent)
    for value_type, intents in INTENTS_BY_VALUE_TYPE.items()
    for intent in intents
    if not intent.is_event
]


@pytest.mark.parametrize(
    ("value_type", "intent"), EVERY_COMMAND, ids=lambda v: getattr(v, "name", str(v))
)
def test_only_creations_and_publishes_are_subject_to_backpressure(
    value_type: ValueType, intent: Intent
) -> None:
    assert applies_to(value_type, intent) is ((value_type, intent) in NEW_WORK)


@pytest.mark.parametrize(
    ("value_type", "intent"),
    [
        (ValueType.JOB, JobIntent.COMPLETE),
        (ValueType.JOB, JobIntent.FAIL),
        (ValueType.JOB, JobIntent.THROW_ERROR),
        (ValueType.PROCESS_INSTANCE, ProcessInstanceIntent.CANCEL),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_commands_that_finish_work_are_always_accepted(
    value_type: ValueType, intent: Intent
) -> None:
    assert not applies_to(value_type, intent)


def test_a_lag_over_the_limit_is_refused_with_partition_topic_lag_limit_and_setting() -> None:
    backpressure = Backpressure(limit_lag=10_000, limit_in_flight=0, commands_topic="t.commands")
    assert backpressure.check(partition=2, lag=12_345) == (
        "partition 2 has 12,345 commands waiting on t.commands, over the limit of 10,000"
        " (PARTITA_BACKPRESSURE_LAG)"
    )


def test_a_value_at_its_limit_is_within_it() -> None:
    backpressure = Backpressure(limit_lag=100, limit_in_flight=10)
    assert backpressure.check(0, lag=100, in_flight=10) is None
    assert backpressure.check(0, lag=0, in_flight=0) is None


def test_commands_in_flight_over_their_limit_are_refused() -> None:
    backpressure = Backpressure(limit_lag=100, limit_in_flight=1_000)
    assert backpressure.check(1, lag=5, in_flight=1_500) == (
        "partition 1 has 1,500 commands in flight, over the limit of 1,000"
    )


def test_the_lag_is_named_first_when_both_limits_are_exceeded() -> None:
    reason = Backpressure(limit_lag=1, limit_in_flight=1).check(0, lag=2, in_flight=2)
    assert reason is not None and "waiting on" in reason


def test_a_limit_of_zero_is_off() -> None:
    off = Backpressure(limit_lag=0, limit_in_flight=0)
    assert not off.enabled
    assert off.check(0, lag=10**9, in_flight=10**9) is None
    assert Backpressure(limit_lag=0, limit_in_flight=5).check(0, lag=10**9, in_flight=5) is None


def test_negative_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="lag -1"):
        Backpressure(limit_lag=-1, limit_in_flight=0)
