"""TIMER TRIGGER: the due-date checker turns a due timer into TRIGGER; TRIGGERED fires the
event it belongs to (a catch event, a boundary event, an event-based gateway's branch, or a
timer start event, which creates an instance), and a cycle with firings left schedules its
next timer (start events and non-interrupting boundary events)."""

from __future__ import annotations

from collections.abc import Iterable

from partita.bpmn import EventNode
from partita.bpmn.schedule import ScheduleError, next_due
from partita.processing.behavior.expressions import ExpressionError, text_of
from partita.processing.behavior.triggers import start_instance, trigger
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.deployment import state as deployment_state
from partita.processing.dispatch import MAX_DUE_COMMANDS, Handlers
from partita.processing.instance import state as instance_state
from partita.processing.timer.state import NO_OWNER, TIMER_DUE, TIMERS, timer_value
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import RejectionType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.intents import TimerIntent
from partita.protocol.records import Record, command
from partita.protocol.values import TimerValue
from partita.state import PartitionDb

handlers = Handlers()


@handlers.processor(TimerIntent.TRIGGER)
def trigger_timer(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, TimerValue)
    stored = ctx.state.column(TIMERS).get((value.element_instance_key, record.key))
    if stored is None:
        raise RejectionError(RejectionType.NOT_FOUND, f"no timer {record.key}")
    timer = timer_value(stored)
    if timer.due_date > ctx.now:
        raise RejectionError(RejectionType.INVALID_STATE, f"timer {record.key} is not due")
    ctx.append_event(TimerIntent.TRIGGERED, timer, record.key)
    deployed = deployment_state.by_key(ctx.state, timer.process_definition_key)
    if deployed is None:
        return
    model = deployed.model(ctx.state)
    event = model.element(timer.target_element_id)
    assert isinstance(event, EventNode) and event.timer is not None
    owner = timer.element_instance_key
    if owner == NO_OWNER:
        start_instance(ctx, deployed, event.id, "{}")
    elif not trigger(ctx, model, owner, event.id, "{}"):
        return
    if timer.repetitions == 1 or event.timer.kind != "cycle":
        return
    if owner != NO_OWNER:
        still = instance_state.instance(ctx.state, owner)
        if event.interrupting or still is None or still.state != Instance.ELEMENT_ACTIVATED.name:
            return
    _schedule_next(ctx, timer, event, owner)


def _schedule_next(ctx: ProcessingContext, timer: TimerValue, event: EventNode, owner: int) -> None:
    assert event.timer is not None
    text = event.timer.expression
    if text.startswith("="):
        variables = visible_variables(ctx.state, owner) if owner > 0 else {}
        try:
            text = text_of(event.timer.expression, variables, event.id)
        except ExpressionError:
            return
    try:
        due = next_due(text, timer.due_date)
    except ScheduleError:
        return
    left = timer.repetitions - 1 if timer.repetitions > 0 else -1
    following = TimerValue(
        element_instance_key=owner,
        process_instance_key=timer.process_instance_key,
        process_definition_key=timer.process_definition_key,
        due_date=max(due, ctx.now),
        target_element_id=timer.target_element_id,
        repetitions=left,
    )
    ctx.append_event(TimerIntent.CREATED, following, ctx.keys.next_key())


@handlers.due_date_checker
def due_timers(db: PartitionDb, now: int) -> Iterable[Record]:
    """The due-date checker: TRIGGER for the earliest timers due, at most MAX_DUE_COMMANDS."""
    due: list[Record] = []
    for (due_date, owner, key), _unused in db.column(TIMER_DUE).items():
        if due_date > now or len(due) == MAX_DUE_COMMANDS:
            break
        due.append(command(TimerIntent.TRIGGER, TimerValue(element_instance_key=owner), key=key))
    return due
