"""PROCESS_INSTANCE ACTIVATE_ELEMENT / COMPLETE_ELEMENT: the lifecycle of BPMN elements.

Activation writes ELEMENT_ACTIVATING, the element's own work, and ELEMENT_ACTIVATED; elements
that wait for nothing complete at once (a follow-up COMPLETE_ELEMENT). Completion writes
ELEMENT_COMPLETING and ELEMENT_COMPLETED, then takes the outgoing sequence flows
(SEQUENCE_FLOW_TAKEN + ACTIVATE_ELEMENT of the target; a parallel join activates once every
incoming flow has arrived). A scope with no active children and no flows in transit completes.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from engine import __version__
from engine.bpmn import (
    EventBasedGateway,
    EventNode,
    ExclusiveGateway,
    Process,
    SequenceFlow,
    ServiceTask,
)
from engine.feel import FeelError, compile_expression
from engine.processing import events, instances, processes
from engine.processing.context import ProcessingContext, RejectionError
from engine.processing.engine import Engine
from engine.processing.job_state import JOBS, job_value
from engine.protocol.enums import (
    BpmnElementType,
    BpmnEventType,
    ErrorType,
    RecordType,
    RejectionType,
    ValueType,
)
from engine.protocol.intents import (
    IncidentIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceResultIntent,
    VariableIntent,
)
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.values import (
    IncidentValue,
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceResultValue,
    ProcessInstanceValue,
    VariableValue,
)

_WAITS = {
    BpmnElementType.SERVICE_TASK,
    BpmnElementType.PROCESS,
    BpmnElementType.RECEIVE_TASK,
    BpmnElementType.INTERMEDIATE_CATCH_EVENT,
    BpmnElementType.EVENT_BASED_GATEWAY,
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
        return
    element = process.element(value.element_id)
    if element.inputs:
        variables = instances.visible_variables(ctx.state, value.flow_scope_key)
        if not _map(ctx, element.inputs, variables, key, value, local=True):
            return
    triggered = events.consume_trigger(ctx, value.flow_scope_key, element.id, key, value)
    if triggered is not None:  # a boundary or start event, or a catch event after a gateway
        merge_event_variables(ctx, element, key, value, triggered)
        ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)
        return
    try:
        openings = events.prepare(ctx, process, element.id, key)
    except events.EventError as error:
        _incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, error.reason, value, key)
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
    if kind not in _WAITS:
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)


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
        ctx.append_event(Instance.ELEMENT_COMPLETED, value, key)
        _answer_awaiting(ctx, key, value, result_variables)
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
    if element.outputs:
        variables = instances.visible_variables(ctx.state, key)
        if not _map(ctx, element.outputs, variables, key, value, local=False):
            return
    ctx.append_event(Instance.ELEMENT_COMPLETING, value, key)
    events.close_events(ctx, key)
    ctx.append_event(Instance.ELEMENT_COMPLETED, value, key)
    for flow in flows:
        _take(ctx, process, flow, value)
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
        bpmn_element_type=target.element_type,
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


def _answer_awaiting(
    ctx: ProcessingContext, key: int, value: ProcessInstanceValue, variables: dict[str, Any]
) -> None:
    """Reply PROCESS_INSTANCE_RESULT COMPLETED to a CREATE_WITH_AWAITING_RESULT request."""
    waiting = ctx.awaiting.pop(key, None)
    if waiting is None:
        return
    reply_to, fetch = waiting
    if fetch:
        variables = {name: variables[name] for name in fetch if name in variables}
    result = ProcessInstanceResultValue(
        bpmn_process_id=value.bpmn_process_id,
        version=value.version,
        process_definition_key=value.process_definition_key,
        process_instance_key=key,
        variables=json.dumps(variables, separators=(",", ":"), ensure_ascii=False),
    )
    record = Record(
        RecordType.EVENT,
        ValueType.PROCESS_INSTANCE_RESULT,
        ProcessInstanceResultIntent.COMPLETED,
        result,
        key,
        ctx.partition_id,
        ctx.command.position if ctx.command is not None else -1,
        ctx.now,
        engine_version=__version__,
    )
    ctx.output.replies.append((reply_to, record))


def cancel(command: Record, ctx: ProcessingContext) -> None:
    """PROCESS_INSTANCE CANCEL: terminate the instance and everything active in it."""
    stored = instances.instance(ctx.state, command.key)
    if stored is None or stored["flowScopeKey"] > 0:
        raise RejectionError(
            RejectionType.NOT_FOUND, f"no active process instance with key {command.key}"
        )
    if stored["state"] == Instance.ELEMENT_TERMINATING.name:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"process instance {command.key} is already terminating"
        )
    _terminate(ctx, command.key, stored, respond=True)


def terminate_element(ctx: ProcessingContext, key: int, stored: dict[str, Any]) -> None:
    """Terminate element instance `key` and what runs in it (an interrupting event)."""
    _terminate(ctx, key, stored)


def merge_event_variables(
    ctx: ProcessingContext,
    element: Any,
    key: int,
    value: ProcessInstanceValue,
    variables: dict[str, Any],
) -> None:
    """An event's variables, merged as a job completion's: local when the element has output
    mappings (they decide what leaves), else set where defined or on the instance."""
    if not variables:
        return
    if element.outputs:
        for name, result in variables.items():
            set_variable(ctx, key, name, result, value)
    else:
        propagate_variables(ctx, key, variables, value)


def _terminate(
    ctx: ProcessingContext, key: int, stored: dict[str, Any], *, respond: bool = False
) -> None:
    """Depth-first: TERMINATING, the children, the element's job, TERMINATED."""
    value = instances.value_of(stored)
    ctx.append_event(Instance.ELEMENT_TERMINATING, value, key, respond=respond)
    for child in instances.children(ctx.state, key):
        child_stored = instances.instance(ctx.state, child)
        if child_stored is not None:
            _terminate(ctx, child, child_stored)
    job_key = stored.get("jobKey", -1)
    job = ctx.state.column(JOBS).get(job_key) if job_key > 0 else None
    if job is not None:
        ctx.append_event(JobIntent.CANCELED, job_value(job), job_key)
    events.close_events(ctx, key)
    ctx.append_event(Instance.ELEMENT_TERMINATED, value, key)
    waiting = ctx.awaiting.pop(key, None)
    if waiting is not None:  # the awaited instance ended without a result
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
        ctx.output.replies.append((waiting[0], rejection))


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
            _incident(ctx, ErrorType.CONDITION_ERROR, f"{flow.id}: {error.reason}", value, key)
            return None
    default = next((f for f in flows if f.id == gateway.default_flow), None)
    if default is None:
        if len(flows) == 1 and flows[0].condition is None:
            return flows[0]
        _incident(
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
        _incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{task.id}: {reason}", value, key)
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


def _map(
    ctx: ProcessingContext,
    mappings: Any,
    variables: dict[str, Any],
    key: int,
    value: ProcessInstanceValue,
    *,
    local: bool,
) -> bool:
    """Apply input (local) or output (propagated) mappings; an incident when one fails."""
    results: dict[str, Any] = {}
    for mapping in mappings:
        try:
            results[mapping.target] = compile_expression(mapping.source).evaluate(variables)
        except FeelError as error:
            _incident(
                ctx, ErrorType.IO_MAPPING_ERROR, f"{mapping.source}: {error.reason}", value, key
            )
            return False
    if local:
        for name, result in results.items():
            set_variable(ctx, key, name, result, value)
    else:
        propagate_variables(ctx, value.flow_scope_key, results, value)
    return True


def set_variable(
    ctx: ProcessingContext, scope_key: int, name: str, result: Any, value: ProcessInstanceValue
) -> None:
    encoded = json.dumps(result, separators=(",", ":"), ensure_ascii=False)
    existing = instances.variable_json(ctx.state, scope_key, name)
    if existing is not None and (existing == encoded or _canonical(existing) == encoded):
        return
    variable = VariableValue(
        name=name,
        value=encoded,
        scope_key=scope_key,
        process_instance_key=value.process_instance_key,
        process_definition_key=value.process_definition_key,
        bpmn_process_id=value.bpmn_process_id,
    )
    intent = VariableIntent.UPDATED if existing is not None else VariableIntent.CREATED
    ctx.append_event(intent, variable, ctx.keys.next_key())


def _canonical(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)


def propagate_variables(
    ctx: ProcessingContext, scope_key: int, results: dict[str, Any], value: ProcessInstanceValue
) -> None:
    """Zeebe's default merge: set each variable where it is defined, nearest scope first, or
    on the process instance when no scope defines it."""
    chain = instances.scope_chain(ctx.state, scope_key)
    for name, result in results.items():
        target = next(
            (s for s in chain if instances.variable_json(ctx.state, s, name) is not None),
            value.process_instance_key,
        )
        set_variable(ctx, target, name, result, value)


def _incident(
    ctx: ProcessingContext,
    error_type: ErrorType,
    message: str,
    value: ProcessInstanceValue,
    key: int,
) -> None:
    incident = IncidentValue(
        error_type=error_type,
        error_message=message,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_key=value.process_definition_key,
        process_instance_key=value.process_instance_key,
        element_id=value.element_id,
        element_instance_key=key,
        variable_scope_key=key,
    )
    ctx.append_event(IncidentIntent.CREATED, incident, ctx.keys.next_key())


def register(engine: Engine) -> None:
    engine.processor(Instance.ACTIVATE_ELEMENT, activate)
    engine.processor(Instance.COMPLETE_ELEMENT, complete)
    engine.processor(Instance.CANCEL, cancel)
