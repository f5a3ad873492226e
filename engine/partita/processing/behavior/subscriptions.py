"""The events an element instance waits for (messages, timers, signals): opening and closing
them.

An element that waits for events (a catch event or receive task itself, an activity's boundary
events, the catch events after an event-based gateway, a scope's event subprocesses) opens
them while it activates: the names, correlation keys and timer values are evaluated first
(`prepare`; a failure is an incident and opens nothing), then each message gets a
PROCESS_MESSAGE_SUBSCRIPTION CREATED here and a MESSAGE_SUBSCRIPTION CREATE on the message's
partition, each timer a TIMER CREATED and each signal a SIGNAL_SUBSCRIPTION CREATED
(`open_events`). They close (PROCESS_MESSAGE_SUBSCRIPTION DELETED + MESSAGE_SUBSCRIPTION
DELETE, TIMER CANCELED, SIGNAL_SUBSCRIPTION DELETED) when the element completes or terminates
(`close_events`). What happens when one fires is `triggers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partita.bpmn import EventNode, Process
from partita.bpmn.schedule import ScheduleError, first_due
from partita.processing.behavior.expressions import ExpressionError, text_of
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.message.state import PROCESS_SUBSCRIPTIONS, subscription_value
from partita.processing.signal import state as signal_state
from partita.processing.timer.state import TIMERS, timer_value
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import (
    MessageSubscriptionIntent,
    ProcessMessageSubscriptionIntent,
    SignalSubscriptionIntent,
    TimerIntent,
)
from partita.protocol.routing import partition_for_correlation_key
from partita.protocol.values import (
    MessageSubscriptionValue,
    ProcessInstanceValue,
    ProcessMessageSubscriptionValue,
    SignalSubscriptionValue,
    TimerValue,
)


@dataclass(frozen=True, slots=True)
class Opening:
    """One event to open, with its expressions evaluated."""

    event: EventNode
    message_name: str = ""
    correlation_key: str = ""
    due_date: int = -1
    repetitions: int = 1
    signal_name: str = ""


def evaluate(event: EventNode, variables: dict[str, Any], now: int) -> Opening:
    """The event with its expressions evaluated; ExpressionError when one fails."""
    if event.message is not None:
        name = text_of(event.message.name, variables, f"{event.id}: the message name")
        key = text_of(event.message.correlation_key, variables, f"{event.id}: the correlation key")
        return Opening(event, message_name=name, correlation_key=key)
    if event.signal is not None:
        name = text_of(event.signal.name, variables, f"{event.id}: the signal name")
        return Opening(event, signal_name=name)
    assert event.timer is not None
    text = text_of(event.timer.expression, variables, f"{event.id}: the timer")
    try:
        due, repetitions = first_due(event.timer.kind, text, now)
    except ScheduleError as error:
        raise ExpressionError(f"{event.id}: {error}") from None
    return Opening(event, due_date=due, repetitions=repetitions)


def prepare(ctx: ProcessingContext, process: Process, element_id: str, key: int) -> list[Opening]:
    """Evaluate the events element instance `key` will wait for (ExpressionError on failure)."""
    events = process.events_of(element_id)
    if not events:
        return []
    if instance_state.trigger_for(ctx.state, _trigger_scope(ctx, key), element_id) is not None:
        return []  # already triggered (after an event-based gateway): waits for nothing
    scope = instance_state.instance(ctx.state, _trigger_scope(ctx, key))
    if scope is not None and scope.element_type is BpmnElementType.MULTI_INSTANCE_BODY:
        events = [e for e in events if e.attached_to is None]  # the body has the boundaries
    variables = visible_variables(ctx.state, key)
    return [evaluate(event, variables, ctx.now) for event in events]


def _trigger_scope(ctx: ProcessingContext, key: int) -> int:
    found = instance_state.instance(ctx.state, key)
    return -1 if found is None else int(found.flow_scope_key)


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
        elif event.signal is not None:
            signal = SignalSubscriptionValue(
                process_definition_key=value.process_definition_key,
                bpmn_process_id=value.bpmn_process_id,
                catch_event_id=event.id,
                catch_event_instance_key=key,
                signal_name=opening.signal_name,
            )
            ctx.append_event(SignalSubscriptionIntent.CREATED, signal, key)
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
        ctx.state.column(PROCESS_SUBSCRIPTIONS).items(PROCESS_SUBSCRIPTIONS.key.prefix(key))
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
    for (_, timer_key), timer in list(ctx.state.column(TIMERS).items(TIMERS.key.prefix(key))):
        ctx.append_event(TimerIntent.CANCELED, timer_value(timer), timer_key)
    for name, signal in signal_state.held_by(ctx.state, key):
        held = signal_state.subscription_value(name, signal)
        ctx.append_event(SignalSubscriptionIntent.DELETED, held, key)
