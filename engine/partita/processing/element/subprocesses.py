"""Embedded and event subprocesses. A subprocess activates like any element, then starts its
start event inside itself; it completes when nothing runs in it any more (the same rule as a
process). An event subprocess starts when the event of its start event fires in the scope that
holds it (`behavior.triggers`); its start event takes that trigger here."""

from __future__ import annotations

from typing import Any

from partita.bpmn import Process, SubProcess
from partita.processing.behavior.scopes import activate_in
from partita.processing.behavior.triggers import consume_trigger
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.protocol.enums import BpmnElementType
from partita.protocol.values import ProcessInstanceValue


def start_inside(
    ctx: ProcessingContext, scope: SubProcess, key: int, value: ProcessInstanceValue, model: Process
) -> None:
    """Activate the start event of subprocess instance `key`."""
    start = model.element(scope.start_event)
    activate_in(ctx, value, start, key)


def event_subprocess_trigger(
    ctx: ProcessingContext, model: Process, element_id: str, value: ProcessInstanceValue
) -> dict[str, Any] | None:
    """The trigger a start event of an event subprocess takes: it waits in the scope that
    holds the event subprocess (where the event fired)."""
    start = model.element(element_id)
    if start.element_type is not BpmnElementType.START_EVENT or start.scope == model.id:
        return None
    sub = model.element(start.scope)
    if not isinstance(sub, SubProcess) or not sub.triggered_by_event:
        return None
    holder = instance_state.instance(ctx.state, value.flow_scope_key)
    if holder is None:
        return None
    return consume_trigger(ctx, holder.flow_scope_key, element_id, -1, value)
