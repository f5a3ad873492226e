"""BPMN escalations: an escalation intermediate throw or end event is caught by the nearest
matching escalation boundary event (on a subprocess or call activity) or escalation event
subprocess, looking from the element that threw it outwards through subprocesses and call
activities, specific codes before catch-all ones. Unlike an error, an escalation nothing
catches is no incident: the throwing event goes on."""

from __future__ import annotations

from partita.bpmn import EventNode
from partita.processing.behavior.triggers import trigger
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.processing.instance import state as instance_state
from partita.protocol.intents import ProcessInstanceIntent as Instance


def catch_escalation(ctx: ProcessingContext, thrower_key: int, code: str) -> EventNode | None:
    """Trigger the event that catches escalation `code` thrown at element instance
    `thrower_key`; the catching event, or None when nothing catches it."""
    current = thrower_key
    while current > 0:
        stored = instance_state.instance(ctx.state, current)
        if stored is None:
            return None
        deployed = deployment_state.by_key(ctx.state, int(stored.process_definition_key))
        assert deployed is not None
        model = deployed.model(ctx.state)
        element_id = str(stored.element_id)
        candidates = [
            boundary
            for boundary_id in model.boundaries.get(element_id, ())
            if isinstance(boundary := model.element(boundary_id), EventNode)
            and boundary.escalation is not None
        ]
        for sub in model.event_subprocesses(element_id):
            start = model.element(sub.start_event) if sub.start_event else None
            if isinstance(start, EventNode) and start.escalation is not None:
                candidates.append(start)
        specific = [c for c in candidates if c.escalation and c.escalation.code == code]
        found = specific or [c for c in candidates if c.escalation and not c.escalation.code]
        if found and stored.state == Instance.ELEMENT_ACTIVATED.name:
            return found[0] if trigger(ctx, model, current, found[0].id, "{}") else None
        parent = int(stored.flow_scope_key)
        if parent <= 0:
            parent = int(stored.parent_element_instance_key)  # into the calling process
        current = parent
    return None
