"""Message and timer start events.

Each partition keeps MESSAGE_START_EVENT_SUBSCRIPTIONs for the message start events of the
latest version of every process (written when the version is deployed or distributed there; a
new version replaces them). A published message creates an instance on its own partition for
each such process it has not yet correlated to, unless an instance that a message with the
same correlation key started is still active. Timer start events run on partition 0: their
timers are created with the version and cancelled by the next one.
"""

from __future__ import annotations

from engine.bpmn import EventNode, Process
from engine.bpmn.schedule import ScheduleError, first_due
from engine.processing import events, processes
from engine.processing.context import ProcessingContext
from engine.protocol.enums import BpmnElementType
from engine.protocol.intents import MessageStartEventSubscriptionIntent as StartSubscription
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.intents import TimerIntent
from engine.protocol.records import Record
from engine.protocol.values import (
    MessageStartEventSubscriptionValue,
    MessageValue,
    ProcessInstanceValue,
    TimerValue,
)
from engine.state import ColumnFamilies, PartitionDb

SUBSCRIPTIONS = ColumnFamilies.MESSAGE_START_EVENT_SUBSCRIPTION  # (message name, definition key)
STARTED = ColumnFamilies.MESSAGE_START_INSTANCE  # (bpmnProcessId, correlation key) -> instance
STARTED_BY_INSTANCE = ColumnFamilies.MESSAGE_START_BY_INSTANCE
CORRELATED = ColumnFamilies.MESSAGE_CORRELATED
NO_OWNER = -1
"""The element instance key of a timer start event's timer (no instance owns it)."""


def start_instance(
    ctx: ProcessingContext,
    deployed: processes.DeployedProcess,
    start_id: str,
    variables: str,
    instance_key: int | None = None,
) -> int:
    """Create an instance that starts at the event `start_id` (PROCESS_EVENT TRIGGERING, then
    the process activates and the start event takes the trigger and its variables)."""
    key = ctx.keys.next_key() if instance_key is None else instance_key
    process = ProcessInstanceValue(
        bpmn_process_id=deployed.bpmn_process_id,
        version=deployed.version,
        process_definition_key=deployed.key,
        process_instance_key=key,
        element_id=deployed.bpmn_process_id,
        bpmn_element_type=BpmnElementType.PROCESS,
    )
    events.start_trigger(ctx, key, start_id, variables, process)
    ctx.append_command(Instance.ACTIVATE_ELEMENT, process, key)
    return key


def correlate(ctx: ProcessingContext, message_key: int, message: MessageValue) -> Record | None:
    """Start instances for `message`; the first CORRELATED record (for the reply) or None."""
    first = None
    prefix = SUBSCRIPTIONS.key.prefix(message.name)
    for (_, definition_key), stored in list(ctx.state.column(SUBSCRIPTIONS).items(prefix)):
        process_id = stored["bpmnProcessId"]
        if ctx.state.column(CORRELATED).exists((message_key, process_id)):
            continue
        if message.correlation_key and (
            ctx.state.column(STARTED).get((process_id, message.correlation_key)) is not None
        ):
            continue  # an instance this correlation key started is still active
        deployed = processes.by_key(ctx.state, definition_key)
        if deployed is None:
            continue
        instance_key = ctx.keys.next_key()
        correlated = MessageStartEventSubscriptionValue(
            process_definition_key=definition_key,
            bpmn_process_id=process_id,
            start_event_id=stored["startEventId"],
            message_name=message.name,
            message_key=message_key,
            correlation_key=message.correlation_key,
            process_instance_key=instance_key,
            variables=message.variables,
        )
        record = ctx.append_event(StartSubscription.CORRELATED, correlated, definition_key)
        first = first or record
        start_instance(ctx, deployed, stored["startEventId"], message.variables, instance_key)
    return first


def on_deployed(
    ctx: ProcessingContext,
    deployed: processes.DeployedProcess,
    model: Process,
    previous: processes.DeployedProcess | None,
) -> None:
    """A new latest version on this partition: replace the previous version's message start
    subscriptions (and, on partition 0, its start timers) with this one's."""
    if previous is not None:
        for event in _starts(previous.model(ctx.state), "message"):
            assert event.message is not None
            value = _subscription(previous, event)
            ctx.append_event(StartSubscription.DELETED, value, previous.key)
        if ctx.partition == 0:
            for (_, timer_key), stored in list(
                ctx.state.column(events.TIMERS).items(events.TIMERS.key.prefix(NO_OWNER))
            ):
                if stored["process_definition_key"] == previous.key:
                    ctx.append_event(TimerIntent.CANCELED, events.timer_value(stored), timer_key)
    for event in _starts(model, "message"):
        ctx.append_event(StartSubscription.CREATED, _subscription(deployed, event), deployed.key)
    if ctx.partition == 0:
        for event in _starts(model, "timer"):
            schedule_start_timer(ctx, deployed.key, event, ctx.now)


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
    return [
        e
        for e in found
        if isinstance(e, EventNode) and (e.message if kind == "message" else e.timer) is not None
    ]


def _subscription(
    deployed: processes.DeployedProcess, event: EventNode
) -> MessageStartEventSubscriptionValue:
    assert event.message is not None
    return MessageStartEventSubscriptionValue(
        process_definition_key=deployed.key,
        bpmn_process_id=deployed.bpmn_process_id,
        start_event_id=event.id,
        message_name=event.message.name,
    )


# -- appliers ---------------------------------------------------------------------------------


def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageStartEventSubscriptionValue)
    db.column(SUBSCRIPTIONS).upsert(
        (value.message_name, value.process_definition_key),
        {"bpmnProcessId": value.bpmn_process_id, "startEventId": value.start_event_id},
    )


def apply_deleted(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageStartEventSubscriptionValue)
    db.column(SUBSCRIPTIONS).delete((value.message_name, value.process_definition_key))


def apply_correlated(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, MessageStartEventSubscriptionValue)
    db.column(CORRELATED).upsert((value.message_key, value.bpmn_process_id), None)
    if value.correlation_key:
        db.column(STARTED).upsert(
            (value.bpmn_process_id, value.correlation_key), value.process_instance_key
        )
        db.column(STARTED_BY_INSTANCE).upsert(
            value.process_instance_key, [value.bpmn_process_id, value.correlation_key]
        )
