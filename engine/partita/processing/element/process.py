"""The process element: an instance opens the events of its event subprocesses and starts at
its none start event, or at the event that created it; completed, it answers a client awaiting
its result and hands its variables to the call activity that started it."""

from __future__ import annotations

from partita.bpmn import Process
from partita.processing.behavior.expressions import ExpressionError
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.results import answer_awaiting
from partita.processing.behavior.scopes import activate_in
from partita.processing.behavior.subscriptions import open_events, prepare
from partita.processing.context import ProcessingContext
from partita.processing.element import call_activities
from partita.processing.instance import state as instance_state
from partita.processing.variable.state import local_variables
from partita.protocol.enums import ErrorType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessInstanceValue
from partita.state.stored import ElementInstance


def activate(
    ctx: ProcessingContext, process: Process, key: int, value: ProcessInstanceValue
) -> None:
    """ACTIVATED, then ACTIVATE_ELEMENT of the start event (an incident when an event
    subprocess's event cannot be evaluated)."""
    try:
        openings = prepare(ctx, process, process.id, key)
    except ExpressionError as error:
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, error.reason, value, key)
        return
    open_events(ctx, openings, key, value)
    ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
    start = process.element(instance_state.triggered_start(ctx.state, key) or process.start_event)
    activate_in(ctx, value, start, key)


def completed(
    ctx: ProcessingContext, stored: ElementInstance, key: int, value: ProcessInstanceValue
) -> None:
    """Once COMPLETING (its events closed) and its end listeners done: COMPLETED; then the
    result to an awaiting client and to the calling activity, if any."""
    result_variables = local_variables(ctx.state, key)
    ctx.append_event(Instance.ELEMENT_COMPLETED, value, key)
    answer_awaiting(ctx, key, value, result_variables)
    call_activities.child_completed(ctx, stored, result_variables)
