"""BPMN XML -> `Process` models, reporting every problem at once.

Supported: none start and end events, tasks whose work is a job (service, send, script and
business rule tasks with `zeebe:taskDefinition`, `zeebe:taskHeaders`; job-based user tasks;
message throw and end events), script tasks with `zeebe:script`, `zeebe:ioMapping`, task and
manual task (pass through), exclusive gateway (conditions, default flow), parallel gateway,
sequence flows (an element without outgoing flows ends its path); message and timer start,
intermediate catch and boundary events, receive tasks and the event-based gateway (`events`).
Any other flow element is rejected by name, never ignored. Diagram interchange, documentation
and extension elements of other vendors are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from partita.bpmn import (
    activities,
    ad_hoc,
    compensation,
    events,
    links,
    listeners,
    subprocesses,
    throws,
)
from partita.bpmn.errors import BpmnValidationError, Problem
from partita.bpmn.model import (
    AdHocSubProcess,
    BusinessRuleTask,
    CallActivity,
    EventNode,
    ExclusiveGateway,
    FlowNode,
    InclusiveGateway,
    JobWorkerElement,
    Process,
    ScriptTask,
    SequenceFlow,
    UserTask,
)
from partita.bpmn.xml import BPMN, Node, parse_xml
from partita.elements import BpmnElementType

_SIMPLE = {
    "task": BpmnElementType.TASK,
    "manualTask": BpmnElementType.MANUAL_TASK,
    "parallelGateway": BpmnElementType.PARALLEL_GATEWAY,
}
_JOB_TASKS = {
    "serviceTask": BpmnElementType.SERVICE_TASK,
    "sendTask": BpmnElementType.SEND_TASK,
}
"""Tasks whose work is always a job (`zeebe:taskDefinition`)."""
_GATEWAYS = {
    BpmnElementType.EXCLUSIVE_GATEWAY,
    BpmnElementType.INCLUSIVE_GATEWAY,
    BpmnElementType.PARALLEL_GATEWAY,
    BpmnElementType.EVENT_BASED_GATEWAY,
}
_IGNORED = {
    "documentation",
    "multiInstanceLoopCharacteristics",  # read by the element it marks
    "completionCondition",  # an ad-hoc subprocess's, read by it
    "standardLoopCharacteristics",
    "incoming",
    "outgoing",
    "extensionElements",
    "laneSet",
    "textAnnotation",
    "association",
    "dataObject",
    "dataObjectReference",
    "dataStoreReference",
    "group",
    "category",
}


ExpressionCheck = Callable[[str], str | None]
"""Returns why an expression is invalid, or None; lets the caller plug in FEEL."""


def parse_bpmn(
    data: bytes,
    resource_name: str = "resource.bpmn",
    check_expression: ExpressionCheck | None = None,
) -> list[Process]:
    """The executable processes of a BPMN resource.

    Raises BpmnValidationError listing every problem (element id and reason) when the XML is
    unsafe or malformed, when an element is not supported, or when the model is inconsistent.
    """
    root = parse_xml(data, resource_name)
    if root.tag != BPMN + "definitions":
        raise BpmnValidationError(
            resource_name, [Problem(root.local, "the root element must be bpmn:definitions")]
        )
    problems: list[Problem] = []
    processes = []
    context = _Context(
        events.messages_of(root),
        events.errors_of(root),
        events.escalations_of(root),
        events.signals_of(root),
    )
    for node in root.find_all(BPMN + "process"):
        if node.attributes.get("isExecutable", "false").lower() != "true":
            continue
        process = _process(node, problems, context)
        if process is not None:
            processes.append(process)
            if check_expression is not None:
                _check_expressions(process, check_expression, problems)
    if not processes and not problems:
        problems.append(Problem("(resource)", 'no executable process (isExecutable="true")'))
    if problems:
        raise BpmnValidationError(resource_name, problems)
    return processes


def _process(node: Node, problems: list[Problem], context: _Context) -> Process | None:
    process_id = node.attributes.get("id", "")
    if not process_id:
        problems.append(Problem(f"line {node.line}", "a process needs an id"))
        return None
    elements = context.elements = {}
    flows = context.flows = {}
    direct = _scope(node, process_id, problems, context)
    starts = [e for e in direct if e.element_type is BpmnElementType.START_EVENT]
    none_starts = [e.id for e in starts if not isinstance(e, EventNode)]
    event_starts = tuple(e.id for e in starts if isinstance(e, EventNode))
    if not starts:
        problems.append(Problem(process_id, "the process has no start event"))
    elif len(none_starts) > 1:
        problems.append(
            Problem(process_id, f"more than one none start event: {', '.join(none_starts)}")
        )
    _validate(elements, flows, problems)
    links.resolve_links(elements, problems)
    compensation.resolve(elements, compensation.associations(node), problems)
    boundaries = events.validate_events(elements, flows, problems)
    starts_with, ends_with = listeners.execution_listeners(node, problems)
    return Process(
        process_id,
        node.attributes.get("name", ""),
        elements,
        flows,
        none_starts[0] if none_starts else "",
        event_starts,
        boundaries,
        start_listeners=starts_with,
        end_listeners=ends_with,
        compensable=any(
            isinstance(e, EventNode) and e.compensation and e.attached_to is not None
            for e in elements.values()
        ),
        cancel_listened=any(
            isinstance(e, UserTask) and e.listeners_of("canceling") for e in elements.values()
        ),
    )


@dataclass(slots=True)
class _Context:
    messages: events.Messages
    errors: dict[str, str]
    escalations: dict[str, str]
    signals: dict[str, str]
    seen: set[str] = field(default_factory=set)
    elements: dict[str, FlowNode] = field(default_factory=dict)
    """The elements of the process being parsed, subprocesses' included (ids are unique)."""
    flows: dict[str, SequenceFlow] = field(default_factory=dict)


def _scope(node: Node, scope_id: str, problems: list[Problem], context: _Context) -> list[FlowNode]:
    """Parse the flow elements directly in `node` (a process or subprocess) into the
    context's flat elements and flows, subprocesses recursively; returns this scope's."""
    nodes: list[Node] = []
    local_flows: dict[str, SequenceFlow] = {}
    for child in node.children:
        if child.namespace != BPMN[1:-1] or child.local in _IGNORED:
            continue
        element_id = child.attributes.get("id", "")
        if not element_id:
            problems.append(Problem(f"line {child.line}", f"bpmn:{child.local} needs an id"))
            continue
        if element_id in context.seen:
            problems.append(Problem(element_id, "the id is used twice"))
            continue
        context.seen.add(element_id)
        if child.local == "sequenceFlow":
            local_flows[element_id] = _flow(child)
        else:
            nodes.append(child)
    node_ids = {n.attributes["id"] for n in nodes}
    incoming: dict[str, list[str]] = {i: [] for i in node_ids}
    outgoing: dict[str, list[str]] = {i: [] for i in node_ids}
    for flow in list(local_flows.values()):
        for ref, end in ((flow.source, "sourceRef"), (flow.target, "targetRef")):
            if ref not in node_ids:
                problems.append(
                    Problem(flow.id, f"{end} '{ref}' is not a flow node of the same scope")
                )
                del local_flows[flow.id]
                break
        else:
            outgoing[flow.source].append(flow.id)
            incoming[flow.target].append(flow.id)
    context.flows.update(local_flows)
    direct: list[FlowNode] = []
    for child in nodes:
        element_id = child.attributes["id"]
        links = {
            "incoming": tuple(incoming[element_id]),
            "outgoing": tuple(outgoing[element_id]),
            "scope": scope_id,
        }
        if child.local == "subProcess":
            element: FlowNode | None = _subprocess(child, links, problems, context)
        elif child.local == "adHocSubProcess":
            element = _ad_hoc(child, links, problems, context)
        else:
            element = _element(child, problems, links, context)
        if element is not None:
            element = listeners.with_listeners(
                element, listeners.execution_listeners(child, problems), problems
            )
            if child.attributes.get("isForCompensation", "false").lower() == "true":
                element = replace(element, for_compensation=True)
            context.elements[element_id] = element
            direct.append(element)
    return direct


def _subprocess(
    node: Node, links: dict[str, Any], problems: list[Problem], context: _Context
) -> FlowNode | None:
    if activities.multi_instance(node, problems):
        return None
    direct = _scope(node, node.attributes["id"], problems, context)
    return subprocesses.subprocess(node, direct, links, problems)


def _ad_hoc(
    node: Node, links: dict[str, Any], problems: list[Problem], context: _Context
) -> FlowNode | None:
    if activities.multi_instance(node, problems):
        return None
    direct = _scope(node, node.attributes["id"], problems, context)
    return ad_hoc.ad_hoc_subprocess(node, direct, links, problems)


def _flow(node: Node) -> SequenceFlow:
    condition = node.find(BPMN + "conditionExpression")
    text = condition.text.strip() if condition is not None else ""
    return SequenceFlow(
        node.attributes["id"],
        node.attributes.get("sourceRef", ""),
        node.attributes.get("targetRef", ""),
        text or None,
    )


def _element(
    node: Node,
    problems: list[Problem],
    links: dict[str, Any],
    context: _Context,
) -> FlowNode | None:
    element_id = node.attributes["id"]
    inputs, outputs = activities.io_mappings(node, problems)
    common: dict[str, Any] = {
        "id": element_id,
        "name": node.attributes.get("name", ""),
        "inputs": inputs,
        "outputs": outputs,
        "multi_instance": activities.loop(node, problems),
        **links,
    }
    local = node.local
    if activities.multi_instance(node, problems):
        return None
    compensating = compensation.definition(node)
    if compensating is not None:
        return compensation.compensation_event(node, compensating, common, problems)
    if local in ("endEvent", "intermediateThrowEvent"):
        return throws.throw_event(
            node,
            common,
            context.errors,
            problems,
            escalations=context.escalations,
            signals=context.signals,
        )
    if local in ("startEvent", "intermediateCatchEvent", "boundaryEvent", "receiveTask"):
        return events.event_node(
            node,
            common,
            context.messages,
            context.errors,
            problems,
            escalations=context.escalations,
            signals=context.signals,
        )
    if local == "callActivity":
        return activities.call_activity(node, problems, common)
    if local == "eventBasedGateway":
        return events.event_based_gateway(common)
    if local in _SIMPLE:
        return FlowNode(element_type=_SIMPLE[local], **common)
    if local == "exclusiveGateway":
        return ExclusiveGateway(
            element_type=BpmnElementType.EXCLUSIVE_GATEWAY,
            default_flow=node.attributes.get("default") or None,
            **common,
        )
    if local == "inclusiveGateway":
        return InclusiveGateway(
            element_type=BpmnElementType.INCLUSIVE_GATEWAY,
            default_flow=node.attributes.get("default") or None,
            **common,
        )
    if local in _JOB_TASKS:
        return activities.job_worker(node, problems, common, _JOB_TASKS[local])
    if local == "scriptTask":
        return activities.script_task(node, problems, common)
    if local == "businessRuleTask":
        return activities.business_rule_task(node, problems, common)
    if local == "userTask":
        return activities.user_task(node, problems, common)
    problems.append(Problem(element_id, f"bpmn:{local} is not supported"))
    return None


def _validate(
    elements: dict[str, FlowNode], flows: dict[str, SequenceFlow], problems: list[Problem]
) -> None:
    for element in elements.values():
        kind = element.element_type
        if kind is BpmnElementType.START_EVENT and element.incoming:
            problems.append(
                Problem(element.id, "a start event cannot have incoming sequence flows")
            )
        if kind is BpmnElementType.END_EVENT and element.outgoing:
            problems.append(Problem(element.id, "an end event cannot have outgoing sequence flows"))
        # any other element without outgoing flows ends its path, as in Zeebe (implicit end)
        if kind in _GATEWAYS and not element.outgoing:
            problems.append(Problem(element.id, "a gateway needs an outgoing sequence flow"))
        if isinstance(element, ExclusiveGateway | InclusiveGateway):
            _validate_gateway(element, flows, problems)
        elif kind not in (BpmnElementType.EXCLUSIVE_GATEWAY, BpmnElementType.INCLUSIVE_GATEWAY):
            for flow_id in element.outgoing:
                if flows[flow_id].condition is not None:
                    problems.append(
                        Problem(
                            flow_id,
                            "only flows leaving an exclusive or inclusive gateway can have"
                            " conditions",
                        )
                    )


def _validate_gateway(
    gateway: ExclusiveGateway | InclusiveGateway,
    flows: dict[str, SequenceFlow],
    problems: list[Problem],
) -> None:
    if gateway.default_flow is not None and gateway.default_flow not in gateway.outgoing:
        problems.append(
            Problem(
                gateway.id,
                f"default flow '{gateway.default_flow}' is not one of its outgoing flows",
            )
        )
    if len(gateway.outgoing) > 1:
        for flow_id in gateway.outgoing:
            if flow_id != gateway.default_flow and flows[flow_id].condition is None:
                problems.append(
                    Problem(
                        flow_id,
                        f"a flow leaving an {_kind(gateway)} gateway needs a condition unless"
                        " it is the default flow",
                    )
                )
    default = flows.get(gateway.default_flow or "")
    if default is not None and default.id in gateway.outgoing and default.condition is not None:
        problems.append(Problem(default.id, "the default flow cannot have a condition"))


def _kind(gateway: FlowNode) -> str:
    return "inclusive" if isinstance(gateway, InclusiveGateway) else "exclusive"


def _check_expressions(process: Process, check: ExpressionCheck, problems: list[Problem]) -> None:
    found = [(flow.id, flow.condition) for flow in process.flows.values() if flow.condition]
    for element in process.elements.values():
        found += [(element.id, m.source) for m in (*element.inputs, *element.outputs)]
        if isinstance(element, JobWorkerElement):
            found += [(element.id, element.job_type), (element.id, element.retries)]
            found += [(element.id, text) for _, text in element.evaluated_headers]
        if isinstance(element, ScriptTask):
            found.append((element.id, element.expression))
        if isinstance(element, BusinessRuleTask):
            found.append((element.id, element.decision_id))
        if isinstance(element, AdHocSubProcess):
            found += [
                (element.id, text)
                for text in (element.active_elements, element.completion_condition)
                if text
            ]
        if isinstance(element, UserTask):
            found += [
                (element.id, text)
                for text in (
                    element.assignee,
                    element.candidate_groups,
                    element.candidate_users,
                    element.due_date,
                    element.follow_up_date,
                    element.priority,
                    element.external_form_reference,
                    element.form_id,
                )
                if text
            ]
        if isinstance(element, CallActivity):
            found.append((element.id, element.process_id))
        loop = element.multi_instance
        if loop is not None:
            found += [
                (element.id, text)
                for text in (loop.input_collection, loop.output_element, loop.completion_condition)
                if text
            ]
        if isinstance(element, EventNode) and element.message is not None:
            found += [
                (element.id, element.message.name),
                (element.id, element.message.correlation_key),
            ]
        if isinstance(element, EventNode) and element.timer is not None:
            found.append((element.id, element.timer.expression))
        if isinstance(element, EventNode) and element.signal is not None:
            found.append((element.id, element.signal.name))
    for element_id, text in found:
        reason = check(text)
        if reason is not None:
            problems.append(Problem(element_id, f"invalid expression '{text}': {reason}"))
