"""The start events a new latest version opens on a partition (written when the version is
deployed or distributed there), replacing those of the version before.

Every partition keeps a MESSAGE_START_EVENT_SUBSCRIPTION for each message start event of the
latest version of every process: a message published there starts an instance (the message
domain's `start_events`). Timer and signal start events run on partition 0 (a signal reaches
every partition, and must start one instance): their timers and SIGNAL_SUBSCRIPTIONs are
created with the version and removed by the next one.
"""

from __future__ import annotations

from partita.bpmn import EventNode, Process
from partita.bpmn.schedule import ScheduleError, first_due
from partita.processing.context import ProcessingContext
from partita.processing.deployment.state import DeployedProcess
from partita.processing.timer.state import NO_OWNER, TIMERS, timer_value
from partita.protocol.intents import MessageStartEventSubscriptionIntent as StartSubscription
from partita.protocol.intents import SignalSubscriptionIntent, TimerIntent
from partita.protocol.values import (
    MessageStartEventSubscriptionValue,
    SignalSubscriptionValue,
    TimerValue,
)


def on_deployed(
    ctx: ProcessingContext,
    deployed: DeployedProcess,
    model: Process,
    previous: DeployedProcess | None,
) -> None:
    """A new latest version on this partition: replace the previous version's message start
    subscriptions (and, on partition 0, its start timers) with this one's."""
    if previous is not None:
        for event in _starts(previous.model(ctx.state), "message"):
            assert event.message is not None
            value = _subscription(previous, event)
            ctx.append_event(StartSubscription.DELETED, value, previous.key)
        if ctx.partition == 0:
            for event in _starts(previous.model(ctx.state), "signal"):
                ctx.append_event(
                    SignalSubscriptionIntent.DELETED, _signal(previous, event), previous.key
                )
            for (_, timer_key), stored in list(
                ctx.state.column(TIMERS).items(TIMERS.key.prefix(NO_OWNER))
            ):
                if stored.process_definition_key == previous.key:
                    ctx.append_event(TimerIntent.CANCELED, timer_value(stored), timer_key)
    for event in _starts(model, "message"):
        ctx.append_event(StartSubscription.CREATED, _subscription(deployed, event), deployed.key)
    if ctx.partition == 0:
        for event in _starts(model, "timer"):
            schedule_start_timer(ctx, deployed.key, event, ctx.now)
        for event in _starts(model, "signal"):
            ctx.append_event(
                SignalSubscriptionIntent.CREATED, _signal(deployed, event), deployed.key
            )


def schedule_start_timer(
    ctx: ProcessingContext, definition_key: int, event: EventNode, now: int, repetitions: int = 0
) -> None:
    assert event.timer is not None
    try:
        due, total = first_due(event.timer.kind, event.timer.expression, now)
    except ScheduleError:
        return  # checked at deploy; a FEEL timer start that fails has nothing to schedule
    timer = TimerValue(
        element_instance_key=NO_OWNER,
        process_definition_key=definition_key,
        due_date=due,
        target_element_id=event.id,
        repetitions=repetitions or total,
    )
    ctx.append_event(TimerIntent.CREATED, timer, ctx.keys.next_key())


def _starts(model: Process, kind: str) -> list[EventNode]:
    found = [model.element(i) for i in model.event_starts]
    return [e for e in found if isinstance(e, EventNode) and getattr(e, kind) is not None]


def _signal(deployed: DeployedProcess, event: EventNode) -> SignalSubscriptionValue:
    assert event.signal is not None
    return SignalSubscriptionValue(
        process_definition_key=deployed.key,
        bpmn_process_id=deployed.bpmn_process_id,
        catch_event_id=event.id,
        signal_name=event.signal.name,
    )


def _subscription(
    deployed: DeployedProcess, event: EventNode
) -> MessageStartEventSubscriptionValue:
    assert event.message is not None
    return MessageStartEventSubscriptionValue(
        process_definition_key=deployed.key,
        bpmn_process_id=deployed.bpmn_process_id,
        start_event_id=event.id,
        message_name=event.message.name,
    )
