"""PROCESS_INSTANCE ACTIVATE_ELEMENT / COMPLETE_ELEMENT: the lifecycle of BPMN elements.

Activation writes ELEMENT_ACTIVATING, the element's own work, and ELEMENT_ACTIVATED; elements
that wait for nothing complete at once (a follow-up COMPLETE_ELEMENT). Completion writes
ELEMENT_COMPLETING and ELEMENT_COMPLETED, then takes the outgoing sequence flows
(SEQUENCE_FLOW_TAKEN + ACTIVATE_ELEMENT of the target; a parallel join activates once every
incoming flow has arrived). A scope with no active children and no flows in transit completes.
What is particular to an element is in its family's module (`process`, `gateways`, `tasks`,
`events`, `subprocesses`, `call_activities`, `multi_instance`).
"""

from __future__ import annotations

from msgspec.structs import replace

from partita.bpmn import (
    AdHocSubProcess,
    BusinessRuleTask,
    CallActivity,
    EventBasedGateway,
    EventNode,
    ExclusiveGateway,
    FlowNode,
    InclusiveGateway,
    JobWorkerElement,
    LinkEvent,
    Process,
    ScriptTask,
    SequenceFlow,
    SubProcess,
    UserTask,
)
from partita.processing.behavior.compensations import delete_subscriptions
from partita.processing.behavior.expressions import ExpressionError
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.scopes import complete_scope_if_done
from partita.processing.behavior.subscriptions import close_events, open_events, prepare
from partita.processing.behavior.variables import map_io, merge_event_variables
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.decision import calls
from partita.processing.deployment import state as deployment_state
from partita.processing.dispatch import Handlers
from partita.processing.element import (
    ad_hoc,
    ad_hoc_jobs,
    call_activities,
    compensation,
    events,
    gateways,
    listeners,
    multi_instance,
    process,
    subprocesses,
    tasks,
)
from partita.processing.instance import state as instance_state
from partita.processing.user_task import creation as user_tasks
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import BpmnElementType, BpmnEventType, ErrorType, RejectionType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceValue

handlers = Handlers()

END = BpmnElementType.END_EVENT
_THROWS = {END, BpmnElementType.INTERMEDIATE_THROW_EVENT}
_WAITS = {
    BpmnElementType.USER_TASK,
    BpmnElementType.AD_HOC_SUB_PROCESS,
    BpmnElementType.PROCESS,
    BpmnElementType.RECEIVE_TASK,
    BpmnElementType.INTERMEDIATE_CATCH_EVENT,
    BpmnElementType.EVENT_BASED_GATEWAY,
    BpmnElementType.SUB_PROCESS,
    BpmnElementType.EVENT_SUB_PROCESS,
    BpmnElementType.CALL_ACTIVITY,
}
"""Elements that stay active after ACTIVATED until something completes them, beside those
whose work is a job (`JobWorkerElement`: tasks, and message throw and end events)."""


def model_of(ctx: ProcessingContext, value: ProcessInstanceValue) -> Process:
    deployed = deployment_state.by_key(ctx.state, value.process_definition_key)
    if deployed is None:
        raise RejectionError(
            RejectionType.NOT_FOUND, f"no process definition {value.process_definition_key}"
        )
    return deployed.model(ctx.state)


@handlers.processor(Instance.ACTIVATE_ELEMENT)
def activate_element(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, ProcessInstanceValue)
    model = model_of(ctx, value)
    key = command.key
    existing = instance_state.instance(ctx.state, key)
    if existing is None:
        ctx.append_event(Instance.ELEMENT_ACTIVATING, value, key)
    elif existing.state != Instance.ELEMENT_ACTIVATING.name:
        raise RejectionError(RejectionType.INVALID_STATE, f"element instance {key} is active")
    # else: an incident stopped the activation and was resolved: continue it
    kind = value.bpmn_element_type
    if kind is BpmnElementType.PROCESS:
        if listeners.all_done(ctx, model, listeners.START, key, value):
            process.activate(ctx, model, key, value)
        return
    element = model.element(value.element_id)
    if kind is multi_instance.BODY:
        multi_instance.activate_body(ctx, element, key, value, model)
        return
    if element.inputs:
        variables = visible_variables(ctx.state, value.flow_scope_key)
        if not map_io(ctx, element.inputs, variables, key, value, local=True):
            return
    if listeners.all_done(ctx, element, listeners.START, key, value):
        _activate_after_listeners(ctx, model, element, key, value)


@handlers.processor(Instance.COMPLETE_EXECUTION_LISTENER)
def complete_execution_listener(command: Record, ctx: ProcessingContext) -> None:
    """An execution listener's job completed: the next listener, or the rest of the element's
    activation (start listeners) or completion (end listeners)."""
    value = command.value
    assert isinstance(value, ProcessInstanceValue)
    key = command.key
    current = instance_state.instance(ctx.state, key)
    if current is None:
        raise RejectionError(RejectionType.NOT_FOUND, f"no element instance {key}")
    model = model_of(ctx, value)
    is_process = value.bpmn_element_type is BpmnElementType.PROCESS
    element = model if is_process else model.element(value.element_id)
    if current.state == Instance.ELEMENT_ACTIVATING.name:
        if not listeners.all_done(ctx, element, listeners.START, key, value):
            return
        if isinstance(element, Process):
            process.activate(ctx, model, key, value)
        else:
            _activate_after_listeners(ctx, model, element, key, value)
    elif current.state == Instance.ELEMENT_COMPLETING.name:
        if not listeners.all_done(ctx, element, listeners.END, key, value):
            return
        if isinstance(element, Process):
            process.completed(ctx, current, key, value)
        else:
            _complete_after_listeners(ctx, model, element, key, value)
    else:
        raise RejectionError(
            RejectionType.INVALID_STATE,
            f"element instance {key} is {current.state}: no execution listener runs",
        )


def _activate_after_listeners(
    ctx: ProcessingContext,
    model: Process,
    element: FlowNode,
    key: int,
    value: ProcessInstanceValue,
) -> None:
    """The element's own activation, once its input mappings and start listeners are done:
    its trigger or throw, its events, its work, ACTIVATED and what follows."""
    kind = value.bpmn_element_type
    triggered = events.take_trigger(ctx, model, element, key, value)
    if triggered is not None:  # a boundary or start event, or a catch event after a gateway
        merge_event_variables(ctx, element, key, value, triggered)
        ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)
        return
    if (
        isinstance(element, EventNode)
        and kind in _THROWS
        and _thrown(ctx, model, element, key, value)
    ):
        return  # an error end event, or an escalation an interrupting catch took
    try:
        openings = prepare(ctx, model, element.id, key)
        called = call_activities.called_process(ctx, element, key)
    except ExpressionError as error:
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, error.reason, value, key)
        return
    except call_activities.CalledElementError as error:
        element_incident(ctx, ErrorType.CALLED_ELEMENT_ERROR, str(error), value, key)
        return
    done, created = _work(ctx, element, key, value)
    if not done:
        return  # an incident stopped it
    inner = None
    if isinstance(element, AdHocSubProcess):
        ad_hoc_jobs.start_output(ctx, element, key, value)
        if element.job_type:  # its job decides what to activate
            if not ad_hoc_jobs.begin(ctx, element, key, value, model):
                return
        else:
            inner = ad_hoc.chosen(ctx, element, key, value, model)
            if inner is None:
                return
    open_events(ctx, openings, key, value)
    ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
    if created is not None:
        user_tasks.assign_on_creation(ctx, *created)
    if isinstance(element, SubProcess):
        subprocesses.start_inside(ctx, element, key, value, model)
    elif inner is not None:
        assert isinstance(element, AdHocSubProcess)
        ad_hoc.start(ctx, element, inner, key, value)
    elif isinstance(element, CallActivity) and called is not None:
        call_activities.call(ctx, element, key, value, called)
    elif isinstance(element, LinkEvent) or (
        kind not in _WAITS and not isinstance(element, JobWorkerElement)
    ):
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)


def _thrown(
    ctx: ProcessingContext,
    model: Process,
    element: EventNode,
    key: int,
    value: ProcessInstanceValue,
) -> bool:
    """What an error, escalation or signal throw event throws; True when its activation ends
    here."""
    if element.compensation:
        compensation.throw(ctx, model, element, key, value)
        return True
    if element.error is not None and value.bpmn_element_type is END:
        events.throw_from_end_event(ctx, element, key, value)
        return True
    if element.escalation is not None:
        return events.throw_escalation(ctx, element, key, value)
    if element.signal is not None:
        return events.throw_signal(ctx, element, key, value)
    return False


def _work(
    ctx: ProcessingContext, element: FlowNode, key: int, value: ProcessInstanceValue
) -> tuple[bool, tuple[int, str] | None]:
    """What a task does when it activates: create its job or user task, run its script or
    evaluate its decision. False (with an incident) when that failed; and the user task's key
    and assignee, when one was created."""
    if isinstance(element, JobWorkerElement):
        return tasks.create_job(ctx, element, key, value), None
    if isinstance(element, ScriptTask):
        return tasks.run_script(ctx, element, key, value), None
    if isinstance(element, BusinessRuleTask):
        return calls.call_decision(ctx, element, key, value), None
    if isinstance(element, UserTask):
        created = user_tasks.create(ctx, element, key, value)
        return created is not None, created
    return True, None


@handlers.processor(Instance.COMPLETE_ELEMENT)
def complete_element(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, ProcessInstanceValue)
    key = command.key
    current = instance_state.instance(ctx.state, key)
    if current is None or current.state != Instance.ELEMENT_ACTIVATED.name:
        raise RejectionError(RejectionType.INVALID_STATE, f"element instance {key} is not active")
    model = model_of(ctx, value)
    if value.bpmn_element_type is BpmnElementType.PROCESS:
        ctx.append_event(Instance.ELEMENT_COMPLETING, value, key)
        if model.events_of(model.id):  # its event subprocesses' start events
            close_events(ctx, key)
        if model.compensable:
            delete_subscriptions(ctx, key)
        if listeners.all_done(ctx, model, listeners.END, key, value):
            process.completed(ctx, current, key, value)
        return
    if model.cancel_listened and _still_terminating(ctx, key):
        return  # completed once its last child has ended (after_termination)
    if value.bpmn_element_type is BpmnElementType.AD_HOC_SUB_PROCESS_INNER_INSTANCE:
        _complete_inner_instance(ctx, model, key, value)
        return
    element = model.element(value.element_id)
    flows = model.outgoing(element.id)
    events.take_caught_trigger(ctx, element, key, value)
    if isinstance(element, EventBasedGateway):
        flows = gateways.fired_flows(ctx, flows, value)
    if isinstance(element, ExclusiveGateway):
        chosen = gateways.choose_flow(ctx, element, flows, value, key)
        if chosen is None:
            return
        flows = [chosen]
    if isinstance(element, InclusiveGateway):
        taken = gateways.inclusive_flows(ctx, element, flows, value, key)
        if taken is None:
            return
        flows = taken
    body = value.bpmn_element_type is multi_instance.BODY
    inner = element.multi_instance is not None and not body  # an instance inside a body
    if isinstance(element, AdHocSubProcess) and element.output_collection:
        ad_hoc_jobs.hand_over_output(ctx, element, key, value)
    if element.outputs and not body:
        variables = visible_variables(ctx.state, key)
        if not map_io(ctx, element.outputs, variables, key, value, local=False):
            return
    if inner and not multi_instance.collect_output(ctx, element, key, value):
        return
    if body:
        multi_instance.hand_over_output(ctx, element, key, value)
    ctx.append_event(Instance.ELEMENT_COMPLETING, value, key)
    if model.events_of(element.id):  # nothing else can hold subscriptions or timers
        close_events(ctx, key)
    if body or listeners.all_done(ctx, element, listeners.END, key, value):
        _complete_after_listeners(ctx, model, element, key, value, flows=flows)


def _complete_inner_instance(
    ctx: ProcessingContext, model: Process, key: int, value: ProcessInstanceValue
) -> None:
    """A path of an ad-hoc subprocess has ended: its inner instance's output element joins the
    output collection, it completes, and the subprocess decides what follows: a new job for
    its worker, its completion condition, or its own completion once nothing runs in it."""
    element = model.element(model.element(value.element_id).scope)
    assert isinstance(element, AdHocSubProcess)
    if not ad_hoc_jobs.collect_output(ctx, element, key, value):
        return
    ctx.append_event(Instance.ELEMENT_COMPLETING, value, key)
    ctx.append_event(Instance.ELEMENT_COMPLETED, value, key)
    scope_key = value.flow_scope_key
    if element.job_type:
        if ad_hoc_jobs.path_completed(ctx, element, scope_key):
            return  # it waits for its new job
    elif ad_hoc.completed_by_condition(ctx, model, scope_key):
        return
    complete_scope_if_done(ctx, scope_key)


def _still_terminating(ctx: ProcessingContext, key: int) -> bool:
    """Whether a child of `key` waits for its canceling task listeners to end."""
    for child in instance_state.children(ctx.state, key):
        stored = instance_state.instance(ctx.state, child)
        if stored is not None and stored.state == Instance.ELEMENT_TERMINATING.name:
            return True
    return False


def _complete_after_listeners(
    ctx: ProcessingContext,
    model: Process,
    element: FlowNode,
    key: int,
    value: ProcessInstanceValue,
    *,
    flows: list[SequenceFlow] | None = None,
) -> None:
    """The rest of a completion once the element is COMPLETING (its events closed) and its end
    listeners are done: COMPLETED, the flows taken (`flows`: those a gateway chose; by default
    every outgoing flow), and what its scope does next."""
    body = value.bpmn_element_type is multi_instance.BODY
    inner = element.multi_instance is not None and not body
    if flows is None:
        flows = model.outgoing(element.id)
    if inner:
        counter, flows = multi_instance.loop_counter(ctx, key), []  # the body takes the flows
    if model.compensable:
        compensation.on_completing(ctx, model, element, key, value)
    ctx.append_event(Instance.ELEMENT_COMPLETED, value, key)
    if compensation.is_handler(value):
        compensation.handler_completed(ctx, key, value)
    for flow in flows:
        _take(ctx, model, flow, value)
    if isinstance(element, LinkEvent) and element.target:  # a link throw goes on at its catch
        _activate(ctx, model.element(element.target), value)
    if element.event_type is BpmnEventType.TERMINATE:
        events.terminate_siblings(ctx, value.flow_scope_key, key)
    if inner:
        multi_instance.inner_completed(ctx, element, counter, value)
    else:
        if model.inclusive_joins(element.scope):  # read no state for what the model lacks
            gateways.fire_ready_joins(ctx, model, value.flow_scope_key, value)
        complete_scope_if_done(ctx, value.flow_scope_key)


def _take(
    ctx: ProcessingContext, model: Process, flow: SequenceFlow, value: ProcessInstanceValue
) -> None:
    taken = replace(
        value,
        element_id=flow.id,
        bpmn_element_type=BpmnElementType.SEQUENCE_FLOW,
        bpmn_event_type=BpmnEventType.UNSPECIFIED,
    )
    ctx.append_event(Instance.SEQUENCE_FLOW_TAKEN, taken, ctx.keys.next_key())
    target = model.element(flow.target)
    if gateways.join_waits(ctx, target, value.flow_scope_key):
        return  # wait for the other branches
    _activate(ctx, target, value)


def _activate(ctx: ProcessingContext, target: FlowNode, value: ProcessInstanceValue) -> None:
    activation = replace(
        value,
        element_id=target.id,
        bpmn_element_type=multi_instance.BODY if target.multi_instance else target.element_type,
        bpmn_event_type=target.event_type,
    )
    ctx.append_command(Instance.ACTIVATE_ELEMENT, activation, ctx.keys.next_key())
