"""BPMN errors: a job's THROW_ERROR or an error end event is caught by the nearest matching
error boundary event or error event subprocess, looking from the element that threw it
outwards through subprocesses and call activities, specific error codes before catch-all ones.
The caller decides what happens when nothing catches it (an UNHANDLED_ERROR_EVENT incident)."""

from __future__ import annotations

from typing import Any

from partita.bpmn import EventNode
from partita.processing.behavior.triggers import trigger
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.processing.instance import state as instance_state
from partita.protocol.intents import ProcessInstanceIntent as Instance


def _matching(candidates: list[tuple[EventNode, Any]], code: str) -> tuple[EventNode, Any] | None:
    specific = [c for c in candidates if c[0].error is not None and c[0].error.code == code]
    catch_all = [c for c in candidates if c[0].error is not None and c[0].error.code == ""]
    found = specific or catch_all
    return found[0] if found else None


def catch_error(ctx: ProcessingContext, thrower_key: int, code: str, variables: str) -> bool:
    """Trigger the event that catches error `code` thrown at element instance `thrower_key`;
    False when nothing catches it."""
    current = thrower_key
    while current > 0:
        stored = instance_state.instance(ctx.state, current)
        if stored is None:
            return False
        deployed = deployment_state.by_key(ctx.state, int(stored.process_definition_key))
        assert deployed is not None
        model = deployed.model(ctx.state)
        element_id = str(stored.element_id)
        candidates: list[tuple[EventNode, Any]] = []
        for boundary_id in model.boundaries.get(element_id, ()):
            boundary = model.element(boundary_id)
            if isinstance(boundary, EventNode) and boundary.error is not None:
                candidates.append((boundary, None))
        for sub in model.event_subprocesses(element_id):
            start = model.element(sub.start_event) if sub.start_event else None
            if isinstance(start, EventNode) and start.error is not None:
                candidates.append((start, sub))
        found = _matching(candidates, code)
        if found is not None and stored.state == Instance.ELEMENT_ACTIVATED.name:
            return trigger(ctx, model, current, found[0].id, variables)
        parent = int(stored.flow_scope_key)
        if parent <= 0:
            parent = int(stored.parent_element_instance_key)  # into the calling process
        current = parent
    return False
