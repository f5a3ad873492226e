"""BPMN XML -> `Process` models, reporting every problem at once.

Supported: none start and end events, service task (`zeebe:taskDefinition`,
`zeebe:taskHeaders`, `zeebe:ioMapping`), task and manual task (pass through), exclusive gateway
(conditions, default flow), parallel gateway, sequence flows; message and timer start,
intermediate catch and boundary events, receive tasks and the event-based gateway (`events`).
Any other flow element is rejected by name, never ignored. Diagram interchange, documentation
and extension elements of other vendors are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.bpmn import events
from engine.bpmn.errors import BpmnValidationError, Problem
from engine.bpmn.model import (
    CallActivity,
    EventNode,
    ExclusiveGateway,
    FlowNode,
    IoMapping,
    MultiInstance,
    Process,
    SequenceFlow,
    ServiceTask,
    SubProcess,
)
from engine.bpmn.xml import Node, parse_xml
from engine.protocol.enums import BpmnElementType

BPMN = "{http://www.omg.org/spec/BPMN/20100524/MODEL}"
ZEEBE = "{http://camunda.org/schema/zeebe/1.0}"

_SIMPLE = {
    "task": BpmnElementType.TASK,
    "manualTask": BpmnElementType.MANUAL_TASK,
    "parallelGateway": BpmnElementType.PARALLEL_GATEWAY,
}
_IGNORED = {
    "documentation",
    "multiInstanceLoopCharacteristics",  # read by the element it marks
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
_EVENT_DEFINITIONS = {
    "messageEventDefinition": "message",
    "timerEventDefinition": "timer",
    "errorEventDefinition": "error",
    "signalEventDefinition": "signal",
    "escalationEventDefinition": "escalation",
    "terminateEventDefinition": "terminate",
    "linkEventDefinition": "link",
    "compensateEventDefinition": "compensation",
    "conditionalEventDefinition": "conditional",
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
    context = _Context(events.messages_of(root), events.errors_of(root))
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
    boundaries = events.validate_events(elements, flows, problems)
    return Process(
        process_id,
        node.attributes.get("name", ""),
        elements,
        flows,
        none_starts[0] if none_starts else "",
        event_starts,
        boundaries,
    )


@dataclass(slots=True)
class _Context:
    messages: events.Messages
    errors: dict[str, str]
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
        else:
            element = _element(child, problems, links, context)
        if element is not None:
            context.elements[element_id] = element
            direct.append(element)
    return direct


def _subprocess(
    node: Node, links: dict[str, Any], problems: list[Problem], context: _Context
) -> FlowNode | None:
    element_id = node.attributes["id"]
    inputs, outputs = _io_mappings(node, problems)
    if _multi_instance(node, problems):
        return None
    direct = _scope(node, element_id, problems, context)
    starts = [e for e in direct if e.element_type is BpmnElementType.START_EVENT]
    by_event = node.attributes.get("triggeredByEvent", "false").lower() == "true"
    if by_event:
        start = starts[0] if len(starts) == 1 else None
        if isinstance(start, EventNode) and start.message and not start.message.correlation_key:
            problems.append(
                Problem(
                    start.id,
                    "the message of an event subprocess start needs"
                    ' <zeebe:subscription correlationKey="..."/>',
                )
            )
        if len(starts) != 1 or not isinstance(starts[0], EventNode):
            problems.append(
                Problem(
                    element_id, "an event subprocess needs one message, timer or error start event"
                )
            )
        if links["incoming"] or links["outgoing"]:
            problems.append(Problem(element_id, "an event subprocess cannot have sequence flows"))
    elif len(starts) != 1 or isinstance(starts[0], EventNode):
        problems.append(
            Problem(element_id, "an embedded subprocess needs exactly one none start event")
        )
    return SubProcess(
        id=element_id,
        element_type=BpmnElementType.EVENT_SUB_PROCESS if by_event else BpmnElementType.SUB_PROCESS,
        name=node.attributes.get("name", ""),
        inputs=inputs,
        outputs=outputs,
        start_event=starts[0].id if len(starts) == 1 else "",
        triggered_by_event=by_event,
        multi_instance=_loop(node, problems),
        **links,
    )


_MULTI_INSTANCE_HOSTS = {
    "serviceTask",
    "receiveTask",
    "subProcess",
    "callActivity",
    "task",
    "manualTask",
}


def _multi_instance(node: Node, problems: list[Problem]) -> bool:
    """True (with a problem) when the element has loop characteristics it cannot have."""
    marker = node.find(BPMN + "multiInstanceLoopCharacteristics")
    loop = node.find(BPMN + "standardLoopCharacteristics")
    if loop is not None:
        problems.append(Problem(node.attributes["id"], "standard loops are not supported"))
        return True
    if marker is not None and node.local not in _MULTI_INSTANCE_HOSTS:
        problems.append(
            Problem(node.attributes["id"], f"a bpmn:{node.local} cannot be multi-instance")
        )
        return True
    return False


def _loop(node: Node, problems: list[Problem]) -> MultiInstance | None:
    marker = node.find(BPMN + "multiInstanceLoopCharacteristics")
    if marker is None:
        return None
    element_id = node.attributes["id"]
    extensions = marker.find(BPMN + "extensionElements")
    loop = extensions.find(ZEEBE + "loopCharacteristics") if extensions is not None else None
    attributes = loop.attributes if loop is not None else {}
    collection = attributes.get("inputCollection", "").strip()
    if not collection:
        problems.append(
            Problem(
                element_id, 'multi-instance needs <zeebe:loopCharacteristics inputCollection="="/>'
            )
        )
        return None
    output_collection = attributes.get("outputCollection", "").strip()
    output_element = attributes.get("outputElement", "").strip()
    if bool(output_collection) != bool(output_element):
        problems.append(Problem(element_id, "outputCollection and outputElement go together"))
    condition = marker.find(BPMN + "completionCondition")
    return MultiInstance(
        sequential=marker.attributes.get("isSequential", "false").lower() == "true",
        input_collection=collection,
        input_element=attributes.get("inputElement", "").strip(),
        output_collection=output_collection,
        output_element=output_element,
        completion_condition=condition.text.strip() if condition is not None else "",
    )


def _flow(node: Node) -> SequenceFlow:
    condition = node.find(BPMN + "conditionExpression")
    text = condition.text.strip() if condition is not None else ""
    return SequenceFlow(
        node.attributes["id"],
        node.attributes.get("sourceRef", ""),
        node.attributes.get("targetRef", ""),
        text or None,
    )


def _event_kind(node: Node) -> str | None:
    for child in node.children:
        if child.namespace == BPMN[1:-1] and child.local in _EVENT_DEFINITIONS:
            return _EVENT_DEFINITIONS[child.local]
    return None


def _element(
    node: Node,
    problems: list[Problem],
    links: dict[str, Any],
    context: _Context,
) -> FlowNode | None:
    element_id = node.attributes["id"]
    inputs, outputs = _io_mappings(node, problems)
    common: dict[str, Any] = {
        "id": element_id,
        "name": node.attributes.get("name", ""),
        "inputs": inputs,
        "outputs": outputs,
        "multi_instance": _loop(node, problems),
        **links,
    }
    local = node.local
    if _multi_instance(node, problems):
        return None
    if local in ("endEvent", "intermediateThrowEvent"):
        return events.throw_event(node, common, context.errors, problems)
    if local in ("startEvent", "intermediateCatchEvent", "boundaryEvent", "receiveTask"):
        return events.event_node(node, common, context.messages, context.errors, problems)
    if local == "callActivity":
        return _call_activity(node, problems, common)
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
    if local == "serviceTask":
        return _service_task(node, problems, common)
    problems.append(Problem(element_id, f"bpmn:{local} is not supported"))
    return None


def _call_activity(node: Node, problems: list[Problem], common: dict[str, Any]) -> FlowNode | None:
    extensions = _extensions(node)
    called = extensions.find(ZEEBE + "calledElement") if extensions is not None else None
    process_id = called.attributes.get("processId", "").strip() if called is not None else ""
    if called is None or not process_id:
        problems.append(
            Problem(common["id"], 'a call activity needs <zeebe:calledElement processId="..."/>')
        )
        return None

    def flag(name: str, default: bool) -> bool:
        return called.attributes.get(name, str(default)).strip().lower() == "true"

    return CallActivity(
        element_type=BpmnElementType.CALL_ACTIVITY,
        process_id=process_id,
        propagate_all_child_variables=flag("propagateAllChildVariables", True),
        propagate_all_parent_variables=flag("propagateAllParentVariables", True),
        **common,
    )


def _extensions(node: Node) -> Node | None:
    return node.find(BPMN + "extensionElements")


def _service_task(
    node: Node, problems: list[Problem], common: dict[str, Any]
) -> ServiceTask | None:
    element_id = node.attributes["id"]
    extensions = _extensions(node)
    definition = extensions.find(ZEEBE + "taskDefinition") if extensions is not None else None
    if definition is None or not definition.attributes.get("type", "").strip():
        problems.append(
            Problem(element_id, 'a service task needs <zeebe:taskDefinition type="..."/>')
        )
        return None
    headers: list[tuple[str, str]] = []
    header_list = extensions.find(ZEEBE + "taskHeaders") if extensions is not None else None
    for header in header_list.find_all(ZEEBE + "header") if header_list is not None else []:
        key = header.attributes.get("key", "")
        if not key:
            problems.append(Problem(element_id, "a zeebe:header needs a key"))
            continue
        headers.append((key, header.attributes.get("value", "")))
    return ServiceTask(
        element_type=BpmnElementType.SERVICE_TASK,
        job_type=definition.attributes["type"].strip(),
        retries=definition.attributes.get("retries", "3").strip() or "3",
        headers=tuple(headers),
        **common,
    )


def _io_mappings(
    node: Node, problems: list[Problem]
) -> tuple[tuple[IoMapping, ...], tuple[IoMapping, ...]]:
    extensions = _extensions(node)
    mapping = extensions.find(ZEEBE + "ioMapping") if extensions is not None else None
    if mapping is None:
        return (), ()
    result: dict[str, list[IoMapping]] = {"input": [], "output": []}
    for kind, mappings in result.items():
        for item in mapping.find_all(ZEEBE + kind):
            source, target = item.attributes.get("source", ""), item.attributes.get("target", "")
            if not source or not target:
                problems.append(
                    Problem(node.attributes["id"], f"a zeebe:{kind} needs a source and a target")
                )
                continue
            mappings.append(IoMapping(source, target))
    return tuple(result["input"]), tuple(result["output"])


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
        if (
            kind not in (BpmnElementType.END_EVENT, BpmnElementType.EVENT_SUB_PROCESS)
            and not element.outgoing
        ):
            problems.append(Problem(element.id, "has no outgoing sequence flow"))
        if isinstance(element, ExclusiveGateway):
            _validate_gateway(element, flows, problems)
        elif kind is not BpmnElementType.EXCLUSIVE_GATEWAY:
            for flow_id in element.outgoing:
                if flows[flow_id].condition is not None:
                    problems.append(
                        Problem(
                            flow_id, "only flows leaving an exclusive gateway can have conditions"
                        )
                    )


def _validate_gateway(
    gateway: ExclusiveGateway, flows: dict[str, SequenceFlow], problems: list[Problem]
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
                        "a flow leaving an exclusive gateway needs a condition unless it is"
                        " the default flow",
                    )
                )
    default = flows.get(gateway.default_flow or "")
    if default is not None and default.id in gateway.outgoing and default.condition is not None:
        problems.append(Problem(default.id, "the default flow cannot have a condition"))


def _check_expressions(process: Process, check: ExpressionCheck, problems: list[Problem]) -> None:
    found = [(flow.id, flow.condition) for flow in process.flows.values() if flow.condition]
    for element in process.elements.values():
        found += [(element.id, m.source) for m in (*element.inputs, *element.outputs)]
        if isinstance(element, ServiceTask):
            found += [(element.id, element.job_type), (element.id, element.retries)]
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
    for element_id, text in found:
        reason = check(text)
        if reason is not None:
            problems.append(Problem(element_id, f"invalid expression '{text}': {reason}"))
