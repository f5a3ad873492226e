"""Events an element instance waits for (messages, timers) and event triggers.

An element that waits for events (a catch event or receive task itself, an activity's boundary
events, the catch events after an event-based gateway) opens them while it activates: the
names, correlation keys and timer values are evaluated first (a failure is an incident and
opens nothing), then each message gets a PROCESS_MESSAGE_SUBSCRIPTION CREATED here and a
MESSAGE_SUBSCRIPTION CREATE on the message's partition, and each timer a TIMER CREATED. They
close (PROCESS_MESSAGE_SUBSCRIPTION DELETED + MESSAGE_SUBSCRIPTION DELETE, TIMER CANCELED) when
the element completes or terminates.

When one fires, `trigger` records a PROCESS_EVENT TRIGGERING (target element and variables)
in the scope where the target will run, and moves the instance on: the catch event completes;
an interrupting boundary event terminates its activity, a non-interrupting one runs beside it;
the event-based gateway completes towards the event that fired. The target consumes the
trigger when it activates (`consume_trigger`: PROCESS_EVENT TRIGGERED, variables merged as a
job completion's are).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.bpmn import EventBasedGateway, EventNode, Process
from engine.bpmn.schedule import ScheduleError, first_due
from engine.feel import FeelError, compile_expression
from engine.processing import instances
from engine.processing.context import ProcessingContext
from engine.processing.engine import Engine
from engine.protocol.enums import BpmnElementType
from engine.protocol.intents import (
    MessageSubscriptionIntent,
    ProcessEventIntent,
    ProcessMessageSubscriptionIntent,
    TimerIntent,
)
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.routing import partition_for_correlation_key
from engine.protocol.values import (
    MessageSubscriptionValue,
    ProcessEventValue,
    ProcessInstanceValue,
    ProcessMessageSubscriptionValue,
    TimerValue,
)
from engine.state import ColumnFamilies, PartitionDb

TRIGGERS = ColumnFamilies.EVENT_TRIGGER
SUBSCRIPTIONS = ColumnFamilies.PROCESS_MESSAGE_SUBSCRIPTION
TIMERS = ColumnFamilies.TIMER
TIMER_DUE = ColumnFamilies.TIMER_DUE_DATE


@dataclass(frozen=True, slots=True)
class Opening:
    """One event to open, with its expressions evaluated."""

    event: EventNode
    message_name: str = ""
    correlation_key: str = ""
    due_date: int = -1
    repetitions: int = 1


class EventError(Exception):
    """An event's expression failed; `reason` names the element and the problem."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def text_of(expression: str, variables: dict[str, Any], what: str) -> str:
    if not expression.startswith("="):
        return expression
    try:
        result = compile_expression(expression).evaluate(variables)
    except FeelError as error:
        raise EventError(f"{what} '{expression}': {error.reason}") from None
    if isinstance(result, bool) or not isinstance(result, str | int | float):
        found = "null" if result is None else type(result).__name__
        raise EventError(f"{what} '{expression}' must be a string or a number, but it is {found}")
    return str(int(result)) if isinstance(result, float) and result.is_integer() else str(result)


def evaluate(event: EventNode, variables: dict[str, Any], now: int) -> Opening:
    """The event with its expressions evaluated; EventError when one fails."""
    if event.message is not None:
        name = text_of(event.message.name, variables, f"{event.id}: the message name")
        key = text_of(event.message.correlation_key, variables, f"{event.id}: the correlation key")
        return Opening(event, message_name=name, correlation_key=key)
    assert event.timer is not None
    text = text_of(event.timer.expression, variables, f"{event.id}: the timer")
    try:
        due, repetitions = first_due(event.timer.kind, text, now)
    except ScheduleError as error:
        raise EventError(f"{event.id}: {error}") from None
    return Opening(event, due_date=due, repetitions=repetitions)


def prepare(ctx: ProcessingContext, process: Process, element_id: str, key: int) -> list[Opening]:
    """Evaluate the events element instance `key` will wait for (EventError on failure)."""
    events = process.events_of(element_id)
    if not events:
        return []
    if _trigger_for(ctx.state, _trigger_scope(ctx, key), element_id) is not None:
        return []  # already triggered (after an event-based gateway): waits for nothing
    scope = instances.instance(ctx.state, _trigger_scope(ctx, key))
    if scope is not None and scope["elementType"] == BpmnElementType.MULTI_INSTANCE_BODY.name:
        events = [e for e in events if e.attached_to is None]  # the body has the boundaries
    variables = instances.visible_variables(ctx.state, key)
    return [evaluate(event, variables, ctx.now) for event in events]


def open_events(
    ctx: ProcessingContext, openings: list[Opening], key: int, value: ProcessInstanceValue
) -> None:
    for opening in openings:
        event = opening.event
        if event.message is not None:
            subscription = ProcessMessageSubscriptionValue(
                subscription_partition_id=partition_for_correlation_key(
                    opening.correlation_key, ctx.partition_count
                )
                + 1,
                process_instance_key=value.process_instance_key,
                element_instance_key=key,
                bpmn_process_id=value.bpmn_process_id,
                message_name=opening.message_name,
                correlation_key=opening.correlation_key,
                element_id=event.id,
                interrupting=event.interrupting,
            )
            ctx.append_event(ProcessMessageSubscriptionIntent.CREATED, subscription, key)
            ctx.append_command(
                MessageSubscriptionIntent.CREATE,
                MessageSubscriptionValue(
                    process_instance_key=value.process_instance_key,
                    element_instance_key=key,
                    bpmn_process_id=value.bpmn_process_id,
                    message_name=opening.message_name,
                    correlation_key=opening.correlation_key,
                    interrupting=event.interrupting,
                ),
            )
        else:
            timer = TimerValue(
                element_instance_key=key,
                process_instance_key=value.process_instance_key,
                process_definition_key=value.process_definition_key,
                due_date=opening.due_date,
                target_element_id=event.id,
                repetitions=opening.repetitions,
            )
            ctx.append_event(TimerIntent.CREATED, timer, ctx.keys.next_key())


def close_events(ctx: ProcessingContext, key: int) -> None:
    """Close every subscription and timer element instance `key` holds."""
    for (_, name), stored in list(
        ctx.state.column(SUBSCRIPTIONS).items(SUBSCRIPTIONS.key.prefix(key))
    ):
        value = subscription_value(stored)
        ctx.append_event(ProcessMessageSubscriptionIntent.DELETED, value, key)
        ctx.append_command(
            MessageSubscriptionIntent.DELETE,
            MessageSubscriptionValue(
                process_instance_key=value.process_instance_key,
                element_instance_key=key,
                bpmn_process_id=value.bpmn_process_id,
                message_name=name,
                correlation_key=value.correlation_key,
            ),
        )
    for (_, timer_key), stored in list(ctx.state.column(TIMERS).items(TIMERS.key.prefix(key))):
        ctx.append_event(TimerIntent.CANCELED, timer_value(stored), timer_key)


def subscription_value(stored: dict[str, Any]) -> ProcessMessageSubscriptionValue:
    return ProcessMessageSubscriptionValue(**stored)


def timer_value(stored: dict[str, Any]) -> TimerValue:
    return TimerValue(**stored)


# -- triggers ---------------------------------------------------------------------------------


def _trigger_scope(ctx: ProcessingContext, key: int) -> int:
    found = instances.instance(ctx.state, key)
    return -1 if found is None else int(found["flowScopeKey"])


def has_trigger(db: PartitionDb, scope_key: int, element_id: str) -> bool:
    return _trigger_for(db, scope_key, element_id) is not None


def _trigger_for(
    db: PartitionDb, scope_key: int, element_id: str
) -> tuple[int, dict[str, Any]] | None:
    for (_, trigger_key), stored in db.column(TRIGGERS).items(TRIGGERS.key.prefix(scope_key)):
        if stored["target"] == element_id:
            return trigger_key, stored
    return None


def _write_trigger(
    ctx: ProcessingContext, scope_key: int, target: str, variables: str, value: ProcessInstanceValue
) -> None:
    event = ProcessEventValue(
        scope_key=scope_key,
        target_element_id=target,
        variables=variables,
        process_definition_key=value.process_definition_key,
        process_instance_key=value.process_instance_key,
    )
    ctx.append_event(ProcessEventIntent.TRIGGERING, event, ctx.keys.next_key())


def trigger(
    ctx: ProcessingContext, process: Process, owner_key: int, target_id: str, variables: str
) -> bool:
    """An event of element instance `owner_key` fired for element `target_id`. False when the
    owner no longer waits (it completed or terminated meanwhile)."""
    from engine.processing import termination as lifecycle

    owner = instances.instance(ctx.state, owner_key)
    if owner is None or owner["state"] != Instance.ELEMENT_ACTIVATED.name:
        return False
    value = instances.value_of(owner)
    owner_id = str(owner["elementId"])
    owner_element = None if owner_id == process.id else process.element(owner_id)
    target = process.element(target_id)
    if target.id == owner_id:  # a catch event or receive task
        _write_trigger(ctx, owner_key, target.id, variables, value)
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, owner_key)
        return True
    if target.element_type is BpmnElementType.START_EVENT:  # an event subprocess of the owner
        assert isinstance(target, EventNode)
        _write_trigger(ctx, owner_key, target.id, variables, value)
        if target.interrupting:
            for child in instances.children(ctx.state, owner_key):
                stored = instances.instance(ctx.state, child)
                if stored is not None and stored["state"] != Instance.ELEMENT_TERMINATING.name:
                    lifecycle.terminate_element(ctx, child, stored)
        sub = process.element(target.scope)
        started = ProcessInstanceValue(
            **{
                **_fields(value),
                "element_id": sub.id,
                "flow_scope_key": owner_key,
                "bpmn_element_type": sub.element_type,
                "bpmn_event_type": target.event_type,
            }
        )
        ctx.append_command(Instance.ACTIVATE_ELEMENT, started, ctx.keys.next_key())
        return True
    scope_key = int(owner["flowScopeKey"])
    _write_trigger(ctx, scope_key, target.id, variables, value)
    if isinstance(owner_element, EventBasedGateway):
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, owner_key)
        return True
    assert isinstance(target, EventNode)
    if target.interrupting:
        lifecycle.terminate_element(ctx, owner_key, owner)
    boundary = ProcessInstanceValue(
        **{
            **_fields(value),
            "element_id": target.id,
            "bpmn_element_type": BpmnElementType.BOUNDARY_EVENT,
            "bpmn_event_type": target.event_type,
        }
    )
    ctx.append_command(Instance.ACTIVATE_ELEMENT, boundary, ctx.keys.next_key())
    return True


def _fields(value: ProcessInstanceValue) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def start_trigger(
    ctx: ProcessingContext,
    instance_key: int,
    start_id: str,
    variables: str,
    value: ProcessInstanceValue,
) -> None:
    """A message or timer start event creates instance `instance_key` at `start_id`."""
    _write_trigger(ctx, instance_key, start_id, variables, value)


def triggered_start(db: PartitionDb, instance_key: int) -> str | None:
    """The start event a pending trigger names for a new instance, if any."""
    for _, stored in db.column(TRIGGERS).items(TRIGGERS.key.prefix(instance_key)):
        return str(stored["target"])
    return None


def consume_trigger(
    ctx: ProcessingContext, scope_key: int, element_id: str, key: int, value: ProcessInstanceValue
) -> dict[str, Any] | None:
    """Take the trigger for `element_id` waiting in `scope_key`: PROCESS_EVENT TRIGGERED; its
    variables (a dict) for the caller to merge. None when there is none."""
    found = _trigger_for(ctx.state, scope_key, element_id)
    if found is None:
        return None
    trigger_key, stored = found
    event = ProcessEventValue(
        scope_key=scope_key,
        target_element_id=element_id,
        variables=stored["variables"],
        process_definition_key=value.process_definition_key,
        process_instance_key=value.process_instance_key,
    )
    ctx.append_event(ProcessEventIntent.TRIGGERED, event, trigger_key)
    variables: dict[str, Any] = json.loads(stored["variables"] or "{}")
    return variables


# -- appliers ---------------------------------------------------------------------------------


def apply_triggering(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessEventValue)
    db.column(TRIGGERS).upsert(
        (value.scope_key, record.key),
        {"target": value.target_element_id, "variables": value.variables},
    )


def apply_triggered(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessEventValue)
    db.column(TRIGGERS).delete((value.scope_key, record.key))


def apply_subscription_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessMessageSubscriptionValue)
    db.column(SUBSCRIPTIONS).upsert(
        (value.element_instance_key, value.message_name),
        {
            "subscription_partition_id": value.subscription_partition_id,
            "process_instance_key": value.process_instance_key,
            "element_instance_key": value.element_instance_key,
            "bpmn_process_id": value.bpmn_process_id,
            "message_name": value.message_name,
            "correlation_key": value.correlation_key,
            "element_id": value.element_id,
            "interrupting": value.interrupting,
        },
    )


def apply_subscription_deleted(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessMessageSubscriptionValue)
    db.column(SUBSCRIPTIONS).delete((value.element_instance_key, value.message_name))


def apply_timer_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, TimerValue)
    db.column(TIMERS).upsert(
        (value.element_instance_key, record.key),
        {
            "element_instance_key": value.element_instance_key,
            "process_instance_key": value.process_instance_key,
            "process_definition_key": value.process_definition_key,
            "due_date": value.due_date,
            "target_element_id": value.target_element_id,
            "repetitions": value.repetitions,
        },
    )
    db.column(TIMER_DUE).upsert((value.due_date, value.element_instance_key, record.key), None)


def apply_timer_removed(record: Record, db: PartitionDb) -> None:
    """TRIGGERED or CANCELED: the timer is gone (a cycle creates its next timer anew)."""
    value = record.value
    assert isinstance(value, TimerValue)
    stored = db.column(TIMERS).get((value.element_instance_key, record.key))
    if stored is None:
        return
    db.column(TIMERS).delete((value.element_instance_key, record.key))
    db.column(TIMER_DUE).delete((stored["due_date"], value.element_instance_key, record.key))


def register(engine: Engine) -> None:
    engine.applier(ProcessEventIntent.TRIGGERING, apply_triggering)
    engine.applier(ProcessEventIntent.TRIGGERED, apply_triggered)
