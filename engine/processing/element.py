"""PROCESS_INSTANCE ACTIVATE_ELEMENT / COMPLETE_ELEMENT: the lifecycle of BPMN elements.

Activation writes ELEMENT_ACTIVATING, the element's own work, and ELEMENT_ACTIVATED; elements
that wait for nothing complete at once (a follow-up COMPLETE_ELEMENT). Completion writes
ELEMENT_COMPLETING and ELEMENT_COMPLETED, then takes the outgoing sequence flows
(SEQUENCE_FLOW_TAKEN + ACTIVATE_ELEMENT of the target; a parallel join activates once every
incoming flow has arrived). A scope with no active children and no flows in transit completes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.bpmn import (
    CallActivity,
    EventBasedGateway,
    EventNode,
    ExclusiveGateway,
    Process,
    SequenceFlow,
    ServiceTask,
    SubProcess,
)
from engine.feel import FeelError, compile_expression
from engine.processing import (
    events,
    instances,
    multi_instance,
    processes,
    scopes,
    termination,
)
from engine.processing.context import ProcessingContext, RejectionError
from engine.processing.engine import Engine
from engine.processing.mappings import (
    element_incident,
    map_io,
    merge_event_variables,
)
from engine.protocol.enums import (
    BpmnElementType,
    BpmnEventType,
    ErrorType,
    RejectionType,
)
from engine.protocol.intents import (
    JobIntent,
)
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.values import (
    JobValue,
    ProcessInstanceValue,
)

END = BpmnElementType.END_EVENT
_TRIGGERABLE = {
    BpmnElementType.BOUNDARY_EVENT,
    BpmnElementType.START_EVENT,
    BpmnElementType.INTERMEDIATE_CATCH_EVENT,
}
_WAITS = {
    BpmnElementType.SERVICE_TASK,
    BpmnElementType.PROCESS,
    BpmnElementType.RECEIVE_TASK,
    BpmnElementType.INTERMEDIATE_CATCH_EVENT,
    BpmnElementType.EVENT_BASED_GATEWAY,
    BpmnElementType.SUB_PROCESS,
    BpmnElementType.EVENT_SUB_PROCESS,
    BpmnElementType.CALL_ACTIVITY,
}


def model_of(ctx: ProcessingContext, value: ProcessInstanceValue) -> Process:
    deployed = processes.by_key(ctx.state, value.process_definition_key)
    if deployed is None:
        raise RejectionError(
            RejectionType.NOT_FOUND, f"no process definition {value.process_definition_key}"
        )
    return deployed.model(ctx.state)


def activate(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, ProcessInstanceValue)
    process = model_of(ctx, value)
    key = command.key
    existing = instances.instance(ctx.state, key)
    if existing is None:
        ctx.append_event(Instance.ELEMENT_ACTIVATING, value, key)
    elif existing["state"] != Instance.ELEMENT_ACTIVATING.name:
        raise RejectionError(RejectionType.INVALID_STATE, f"element instance {key} is active")
    # else: an incident stopped the activation and was resolved: continue it
    kind = value.bpmn_element_type
    if kind is BpmnElementType.PROCESS:
        _activate_process(ctx, process, key, value)
        return
    element = process.element(value.element_id)
    if kind is multi_instance.BODY:
        multi_instance.activate_body(ctx, element, key, value, process)
        return
    if element.inputs:
        variables = instances.visible_variables(ctx.state, value.flow_scope_key)
        if not map_io(ctx, element.inputs, variables, key, value, local=True):
            return
    triggered = _take_trigger(ctx, process, element, key, value)
    if triggered is not None:  # a boundary or start event, or a catch event after a gateway
        merge_event_variables(ctx, element, key, value, triggered)
        ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)
        return
    if isinstance(element, EventNode) and element.error is not None and kind is END:
        scopes.throw_from_end_event(ctx, element, key, value)
        return
    try:
        openings = events.prepare(ctx, process, element.id, key)
        called = _called_process(ctx, element, key)
    except events.EventError as error:
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, error.reason, value, key)
        return
    except _CalledElementError as error:
        element_incident(ctx, ErrorType.CALLED_ELEMENT_ERROR, str(error), value, key)
        return
    if isinstance(element, ServiceTask):
        dynamic = element.job_type.startswith("=") or element.retries.startswith("=")
        variables = instances.visible_variables(ctx.state, key) if dynamic else {}
        job = _job(ctx, element, variables, key, value)
        if job is None:
            return
        ctx.append_event(JobIntent.CREATED, job, ctx.keys.next_key())
    events.open_events(ctx, openings, key, value)
    ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
    if isinstance(element, SubProcess):
        scopes.start_inside(ctx, element, key, value, process)
    elif isinstance(element, CallActivity) and called is not None:
        scopes.call(ctx, element, key, value, called)
    elif kind not in _WAITS:
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)


def _take_trigger(
    ctx: ProcessingContext, process: Process, element: Any, key: int, value: ProcessInstanceValue
) -> dict[str, Any] | None:
    """The variables of the event that activates this element, if an event does."""
    if element.element_type not in _TRIGGERABLE:  # only these can be activated by an event
        return None
    triggered = events.consume_trigger(ctx, value.flow_scope_key, element.id, key, value)
    if triggered is None:
        triggered = scopes.event_subprocess_trigger(ctx, process, element.id, value)
    return triggered


class _CalledElementError(Exception):
    """The process a call activity names cannot be started."""


def _called_process(
    ctx: ProcessingContext, element: Any, key: int
) -> processes.DeployedProcess | None:
    if not isinstance(element, CallActivity):
        return None
    variables = (
        instances.visible_variables(ctx.state, key) if element.process_id.startswith("=") else {}
    )
    process_id = events.text_of(element.process_id, variables, f"{element.id}: the called process")
    called = processes.latest(ctx.state, process_id)
    if called is None:
        raise _CalledElementError(f"{element.id}: no process '{process_id}' is deployed")
    return called


def _activate_process(
    ctx: ProcessingContext, process: Process, key: int, value: ProcessInstanceValue
) -> None:
    """A process instance opens the events of its event subprocesses and starts at its none
    start event, or at the event that created it."""
    try:
        openings = events.prepare(ctx, process, process.id, key)
    except events.EventError as error:
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, error.reason, value, key)
        return
    events.open_events(ctx, openings, key, value)
    ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
    start = process.element(events.triggered_start(ctx.state, key) or process.start_event)
    child = replace(
        value,
        element_id=start.id,
        flow_scope_key=key,
        bpmn_element_type=start.element_type,
        bpmn_event_type=start.event_type,
    )
    ctx.append_command(Instance.ACTIVATE_ELEMENT, child, ctx.keys.next_key())


def complete(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, ProcessInstanceValue)
    key = command.key
    current = instances.instance(ctx.state, key)
    if current is None or current["state"] != Instance.ELEMENT_ACTIVATED.name:
        raise RejectionError(RejectionType.INVALID_STATE, f"element instance {key} is not active")
    process = model_of(ctx, value)
    if value.bpmn_element_type is BpmnElementType.PROCESS:
        result_variables = instances.local_variables(ctx.state, key)
        ctx.append_event(Instance.ELEMENT_COMPLETING, value, key)
        events.close_events(ctx, key)
        ctx.append_event(Instance.ELEMENT_COMPLETED, value, key)
        termination.answer_awaiting(ctx, key, value, result_variables)
        scopes.child_completed(ctx, current, result_variables)
        return
    element = process.element(value.element_id)
    flows = process.outgoing(element.id)
    if isinstance(element, EventNode) and element.attached_to is None:
        triggered = events.consume_trigger(ctx, key, element.id, key, value)
        if triggered is not None:
            merge_event_variables(ctx, element, key, value, triggered)
    if isinstance(element, EventBasedGateway):
        flows = [f for f in flows if events.has_trigger(ctx.state, value.flow_scope_key, f.target)]
    if isinstance(element, ExclusiveGateway):
        chosen = _choose(ctx, element, flows, value, key)
        if chosen is None:
            return
        flows = [chosen]
    body = value.bpmn_element_type is multi_instance.BODY
    inner = element.multi_instance is not None and not body  # an instance inside a body
    if element.outputs and not body:
        variables = instances.visible_variables(ctx.state, key)
        if not map_io(ctx, element.outputs, variables, key, value, local=False):
            return
    if inner:
        if not multi_instance.collect_output(ctx, element, key, value):
            return
        counter, flows = multi_instance.loop_counter(ctx, key), []  # the body takes the flows
    if body:
        multi_instance.hand_over_output(ctx, element, key, value)
    ctx.append_event(Instance.ELEMENT_COMPLETING, value, key)
    if process.events_of(element.id):  # nothing else can hold subscriptions or timers
        events.close_events(ctx, key)
    ctx.append_event(Instance.ELEMENT_COMPLETED, value, key)
    for flow in flows:
        _take(ctx, process, flow, value)
    if element.event_type is BpmnEventType.TERMINATE:
        scopes.terminate_siblings(ctx, value.flow_scope_key, key)
    if inner:
        multi_instance.inner_completed(ctx, element, counter, value)
    else:
        _complete_scope_if_done(ctx, value.flow_scope_key)


def _take(
    ctx: ProcessingContext, process: Process, flow: SequenceFlow, value: ProcessInstanceValue
) -> None:
    taken = replace(
        value,
        element_id=flow.id,
        bpmn_element_type=BpmnElementType.SEQUENCE_FLOW,
        bpmn_event_type=BpmnEventType.UNSPECIFIED,
    )
    ctx.append_event(Instance.SEQUENCE_FLOW_TAKEN, taken, ctx.keys.next_key())
    target = process.element(flow.target)
    if target.element_type is BpmnElementType.PARALLEL_GATEWAY and len(target.incoming) > 1:
        scope = value.flow_scope_key
        if any(instances.taken_count(ctx.state, scope, target.id, f) < 1 for f in target.incoming):
            return  # wait for the other branches
    activation = replace(
        value,
        element_id=target.id,
        bpmn_element_type=multi_instance.BODY if target.multi_instance else target.element_type,
        bpmn_event_type=target.event_type,
    )
    ctx.append_command(Instance.ACTIVATE_ELEMENT, activation, ctx.keys.next_key())


def _complete_scope_if_done(ctx: ProcessingContext, scope_key: int) -> None:
    scope = instances.instance(ctx.state, scope_key)
    if scope is None or scope["activeFlows"] > 0 or instances.children(ctx.state, scope_key):
        return
    if scope["state"] != Instance.ELEMENT_ACTIVATED.name:
        return
    ctx.append_command(Instance.COMPLETE_ELEMENT, instances.value_of(scope), scope_key)


def _choose(
    ctx: ProcessingContext,
    gateway: ExclusiveGateway,
    flows: list[SequenceFlow],
    value: ProcessInstanceValue,
    key: int,
) -> SequenceFlow | None:
    variables = instances.visible_variables(ctx.state, key)
    for flow in flows:
        if flow.id == gateway.default_flow or flow.condition is None:
            continue
        try:
            if compile_expression(flow.condition).evaluate_as("boolean", variables):
                return flow
        except FeelError as error:
            element_incident(
                ctx, ErrorType.CONDITION_ERROR, f"{flow.id}: {error.reason}", value, key
            )
            return None
    default = next((f for f in flows if f.id == gateway.default_flow), None)
    if default is None:
        if len(flows) == 1 and flows[0].condition is None:
            return flows[0]
        element_incident(
            ctx,
            ErrorType.CONDITION_ERROR,
            f"no outgoing flow of {gateway.id} has a true condition and there is no default flow",
            value,
            key,
        )
    return default


def _job(
    ctx: ProcessingContext,
    task: ServiceTask,
    variables: dict[str, Any],
    key: int,
    value: ProcessInstanceValue,
) -> JobValue | None:
    try:
        job_type = compile_expression(task.job_type).evaluate_as("string", variables)
        retries = compile_expression(task.retries).evaluate(variables)
        retries = int(retries)
    except (FeelError, ValueError, TypeError) as error:
        reason = error.reason if isinstance(error, FeelError) else str(error)
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{task.id}: {reason}", value, key)
        return None
    return JobValue(
        type=job_type,
        retries=retries,
        custom_headers=dict(task.headers),
        process_instance_key=value.process_instance_key,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_version=value.version,
        process_definition_key=value.process_definition_key,
        element_id=task.id,
        element_instance_key=key,
    )


def register(engine: Engine) -> None:
    engine.processor(Instance.ACTIVATE_ELEMENT, activate)
    engine.processor(Instance.COMPLETE_ELEMENT, complete)
    engine.processor(Instance.CANCEL, termination.cancel)
