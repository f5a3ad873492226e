"""An event fired: what it records and how the instance moves on.

`trigger` records a PROCESS_EVENT TRIGGERING (target element and variables) in the scope
where the target will run, and moves the instance on: the catch event or receive task
completes; an interrupting boundary event terminates its activity, a non-interrupting one runs
beside it; the event-based gateway completes towards the event that fired; the start event of
an event subprocess starts it (an interrupting one terminates the rest of its scope first).
The target consumes the trigger when it activates (`consume_trigger`: PROCESS_EVENT
TRIGGERED, its variables merged as a job completion's are). A message or timer start event
creates a new instance at that event (`start_instance`).
"""

from __future__ import annotations

from typing import Any

from partita.bpmn import EventBasedGateway, EventNode, Process
from partita.processing.behavior.after_termination import (
    activate_boundary,
    activate_event_subprocess,
)
from partita.processing.behavior.termination import terminate_element, terminate_or_wait
from partita.processing.context import ProcessingContext
from partita.processing.deployment.state import DeployedProcess
from partita.processing.instance import state as instance_state
from partita.protocol import json_text
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import ProcessEventIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessEventValue, ProcessInstanceValue


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
    owner = instance_state.instance(ctx.state, owner_key)
    if owner is None or owner.state != Instance.ELEMENT_ACTIVATED.name:
        return False
    value = instance_state.value_of(owner)
    owner_id = str(owner.element_id)
    owner_element = None if owner_id == process.id else process.element(owner_id)
    target = process.element(target_id)
    if target.id == owner_id:  # a catch event or receive task
        _write_trigger(ctx, owner_key, target.id, variables, value)
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, owner_key)
        return True
    if target.element_type is BpmnElementType.START_EVENT:  # an event subprocess of the owner
        assert isinstance(target, EventNode)
        _write_trigger(ctx, owner_key, target.id, variables, value)
        waits = False
        if target.interrupting:
            for child in instance_state.children(ctx.state, owner_key):
                stored = instance_state.instance(ctx.state, child)
                if stored is not None:
                    waits |= not terminate_or_wait(ctx, child, stored)
        if not waits:  # else it starts once the last child has ended (after_termination)
            activate_event_subprocess(ctx, process, owner_key, value, target)
        return True
    scope_key = int(owner.flow_scope_key)
    _write_trigger(ctx, scope_key, target.id, variables, value)
    if isinstance(owner_element, EventBasedGateway):
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, owner_key)
        return True
    assert isinstance(target, EventNode)
    if target.interrupting and not terminate_element(ctx, owner_key, owner):
        return True  # it activates once its activity has ended (after_termination)
    activate_boundary(ctx, value, target)
    return True


def start_instance(
    ctx: ProcessingContext,
    deployed: DeployedProcess,
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
    _write_trigger(ctx, key, start_id, variables, process)
    ctx.append_command(Instance.ACTIVATE_ELEMENT, process, key)
    return key


def consume_trigger(
    ctx: ProcessingContext, scope_key: int, element_id: str, key: int, value: ProcessInstanceValue
) -> dict[str, Any] | None:
    """Take the trigger for `element_id` waiting in `scope_key`: PROCESS_EVENT TRIGGERED; its
    variables (a dict) for the caller to merge. None when there is none."""
    found = instance_state.trigger_for(ctx.state, scope_key, element_id)
    if found is None:
        return None
    trigger_key, stored = found
    event = ProcessEventValue(
        scope_key=scope_key,
        target_element_id=element_id,
        variables=stored.variables,
        process_definition_key=value.process_definition_key,
        process_instance_key=value.process_instance_key,
    )
    ctx.append_event(ProcessEventIntent.TRIGGERED, event, trigger_key)
    variables: dict[str, Any] = json_text.parse(stored.variables or "{}")
    return variables
