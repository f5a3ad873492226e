"""Activities and their extension elements: service tasks (`zeebe:taskDefinition`,
`zeebe:taskHeaders`), call activities (`zeebe:calledElement`), `zeebe:ioMapping`, and
multi-instance loop characteristics (`zeebe:loopCharacteristics`)."""

from __future__ import annotations

from typing import Any

from partita.bpmn.errors import Problem
from partita.bpmn.model import CallActivity, FlowNode, IoMapping, MultiInstance, ServiceTask
from partita.bpmn.xml import Node
from partita.elements import BpmnElementType

BPMN = "{http://www.omg.org/spec/BPMN/20100524/MODEL}"
ZEEBE = "{http://camunda.org/schema/zeebe/1.0}"


_MULTI_INSTANCE_HOSTS = {
    "serviceTask",
    "receiveTask",
    "subProcess",
    "callActivity",
    "task",
    "manualTask",
}


def multi_instance(node: Node, problems: list[Problem]) -> bool:
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


def loop(node: Node, problems: list[Problem]) -> MultiInstance | None:
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


def call_activity(node: Node, problems: list[Problem], common: dict[str, Any]) -> FlowNode | None:
    extensions = extension_elements(node)
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


def extension_elements(node: Node) -> Node | None:
    return node.find(BPMN + "extensionElements")


def service_task(node: Node, problems: list[Problem], common: dict[str, Any]) -> ServiceTask | None:
    element_id = node.attributes["id"]
    extensions = extension_elements(node)
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


def io_mappings(
    node: Node, problems: list[Problem]
) -> tuple[tuple[IoMapping, ...], tuple[IoMapping, ...]]:
    extensions = extension_elements(node)
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
