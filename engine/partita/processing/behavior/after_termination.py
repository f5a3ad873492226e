"""What follows an element's termination: ELEMENT_TERMINATED, and, when that ends a wait, what
the wait held back.

A termination normally ends within the command that began it (`termination`). It waits when a
user task has canceling task listeners: the task stays CANCELING and its element TERMINATING
while their jobs run, and so do the terminating scopes around it. When the last listener job
completes (`user_task.transitions`), `finish_termination` ends the element and goes on outwards,
as Zeebe does when a child's termination completes:

- a scope that was terminating and has no child left ends too (a call activity once its
  called instance has ended);
- a live scope gets what the termination was for: the interrupting boundary event whose
  trigger waits there for this element, else, once it has no child left, the interrupting
  event subprocess whose trigger waits there, else its own completion if nothing else runs in
  it (a terminate end event's scope, a multi-instance or ad-hoc subprocess whose completion
  condition was met).
"""

from __future__ import annotations

from msgspec.structs import replace

from partita import __version__
from partita.bpmn import EventNode, Process
from partita.processing.behavior.scopes import activate_in, complete_scope_if_done
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.processing.instance import state as instance_state
from partita.protocol.enums import BpmnElementType, RecordType, RejectionType, ValueType
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceCreationValue, ProcessInstanceValue
from partita.state.stored import ElementInstance

_TERMINATING = Instance.ELEMENT_TERMINATING.name
_ACTIVATED = Instance.ELEMENT_ACTIVATED.name


def terminated(ctx: ProcessingContext, key: int, value: ProcessInstanceValue) -> None:
    """ELEMENT_TERMINATED; a client awaiting the instance's result is answered with a
    rejection: it ended without one."""
    ctx.append_event(Instance.ELEMENT_TERMINATED, value, key)
    waiting = ctx.awaiting.pop(key)
    if waiting is None:
        return
    request = ProcessInstanceCreationValue(
        bpmn_process_id=value.bpmn_process_id,
        version=value.version,
        process_definition_key=value.process_definition_key,
        process_instance_key=key,
    )
    rejection = Record(
        RecordType.COMMAND_REJECTION,
        ValueType.PROCESS_INSTANCE_CREATION,
        ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
        request,
        key,
        ctx.partition_id,
        timestamp=ctx.now,
        rejection_type=RejectionType.INVALID_STATE,
        rejection_reason=f"process instance {key} was terminated before it completed",
        engine_version=__version__,
    )
    ctx.output.replies.append((waiting.reply_to, rejection))


def is_terminating(stored: ElementInstance) -> bool:
    return stored.state == _TERMINATING


def activate_boundary(
    ctx: ProcessingContext, owner: ProcessInstanceValue, target: EventNode
) -> None:
    """ACTIVATE_ELEMENT for boundary event `target` of the element instance `owner`."""
    boundary = replace(
        owner,
        element_id=target.id,
        bpmn_element_type=BpmnElementType.BOUNDARY_EVENT,
        bpmn_event_type=target.event_type,
    )
    ctx.append_command(Instance.ACTIVATE_ELEMENT, boundary, ctx.keys.next_key())


def activate_event_subprocess(
    ctx: ProcessingContext,
    process: Process,
    owner_key: int,
    owner: ProcessInstanceValue,
    start: EventNode,
) -> None:
    """ACTIVATE_ELEMENT for the event subprocess of start event `start`, in `owner_key`."""
    activate_in(ctx, owner, process.element(start.scope), owner_key, start.event_type)


def finish_termination(ctx: ProcessingContext, key: int) -> None:
    """End element instance `key`, whose termination waited, and go on outwards."""
    stored = instance_state.instance(ctx.state, key)
    if stored is None or stored.state != _TERMINATING:
        return
    terminated(ctx, key, instance_state.value_of(stored))
    scope_key = stored.flow_scope_key
    if scope_key <= 0:  # a called instance: its call activity may have waited for it
        caller = instance_state.instance(ctx.state, stored.parent_element_instance_key)
        if caller is not None and caller.state == _TERMINATING and not _running(ctx, caller, -1):
            finish_termination(ctx, stored.parent_element_instance_key)
        return
    scope = instance_state.instance(ctx.state, scope_key)
    if scope is None:
        return
    if scope.state == _TERMINATING:
        if not _running(ctx, scope, scope_key):
            finish_termination(ctx, scope_key)
        return
    if scope.state == _ACTIVATED:
        _interrupted(ctx, scope_key, scope, stored)


def _running(ctx: ProcessingContext, stored: ElementInstance, key: int) -> bool:
    """Whether something still runs inside: a child, or a called instance."""
    if key > 0 and instance_state.children(ctx.state, key):
        return True
    called = stored.called_child_key
    return called > 0 and instance_state.instance(ctx.state, called) is not None


def _interrupted(
    ctx: ProcessingContext, scope_key: int, scope: ElementInstance, ended: ElementInstance
) -> None:
    """A live scope whose child `ended` after waiting: what the termination was for."""
    deployed = deployment_state.by_key(ctx.state, scope.process_definition_key)
    if deployed is None:
        return
    process = deployed.model(ctx.state)
    starts: list[EventNode] = []
    for trigger in instance_state.triggers(ctx.state, scope_key):
        target = process.elements.get(trigger.target)
        if not isinstance(target, EventNode) or not target.interrupting:
            continue
        if target.attached_to == ended.element_id:
            activate_boundary(ctx, instance_state.value_of(ended), target)
            return
        if target.element_type is BpmnElementType.START_EVENT:
            starts.append(target)  # an event subprocess's (a process's start has no trigger here)
    if instance_state.children(ctx.state, scope_key):
        return  # the others end first
    if starts:
        value = instance_state.value_of(scope)
        activate_event_subprocess(ctx, process, scope_key, value, starts[0])
        return
    complete_scope_if_done(ctx, scope_key)
