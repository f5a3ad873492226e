"""Ad-hoc subprocesses (`bpmn:adHocSubProcess`), as Zeebe 8.8 models them: BPMN mode, where the
`activeElementsCollection` names the inner elements to activate and a `completionCondition` may
end it, or job worker mode (a `zeebe:taskDefinition`: a job decides what to activate, as
Camunda's AI agents do); either may gather `zeebe:adHoc outputElement` of each completed path
into `outputCollection`."""

from __future__ import annotations

from typing import Any

from partita.bpmn import activities
from partita.bpmn.errors import Problem
from partita.bpmn.model import AdHocSubProcess, FlowNode
from partita.bpmn.xml import BPMN, ZEEBE, Node
from partita.elements import BpmnElementType


def ad_hoc_subprocess(
    node: Node, direct: list[FlowNode], links: dict[str, Any], problems: list[Problem]
) -> AdHocSubProcess:
    """The model of an ad-hoc subprocess whose inner elements (`direct`) are parsed."""
    element_id = node.attributes["id"]
    inputs, outputs = activities.io_mappings(node, problems)
    for inner in direct:
        if inner.element_type is BpmnElementType.START_EVENT:
            problems.append(Problem(inner.id, "Must not contain a start event."))
        elif inner.element_type is BpmnElementType.END_EVENT:
            problems.append(Problem(inner.id, "Must not contain an end event."))
    extensions = activities.extension_elements(node)
    ad_hoc = extensions.find(ZEEBE + "adHoc") if extensions is not None else None
    attributes = {
        k: v.strip() for k, v in (ad_hoc.attributes if ad_hoc is not None else {}).items()
    }
    definition = extensions.find(ZEEBE + "taskDefinition") if extensions is not None else None
    condition_node = node.find(BPMN + "completionCondition")
    condition = condition_node.text.strip() if condition_node is not None else ""
    cancel = node.attributes.get("cancelRemainingInstances", "true").lower() != "false"
    job: dict[str, Any] = {}
    if definition is not None:
        job_type = definition.attributes.get("type", "").strip()
        if not job_type:
            problems.append(Problem(element_id, "Attribute 'type' must be present and not empty"))
        for wrong, why in (
            (not cancel, "Must not set cancelRemainingInstances to false"),
            (bool(condition), "Must not set completionCondition"),
            (
                bool(attributes.get("activeElementsCollection")),
                "Must not set activeElementsCollection",
            ),
        ):
            if wrong:
                problems.append(
                    Problem(element_id, f"{why} in combination with zeebe:taskDefinition")
                )
        job = {
            "job_type": job_type,
            "retries": definition.attributes.get("retries", "3").strip() or "3",
            "headers": activities.task_headers(element_id, extensions, problems),
        }
    output_element = attributes.get("outputElement", "")
    if output_element and not output_element.startswith("="):
        problems.append(
            Problem(element_id, f"outputElement must be a FEEL expression, not '{output_element}'")
        )
    return AdHocSubProcess(
        id=element_id,
        element_type=BpmnElementType.AD_HOC_SUB_PROCESS,
        name=node.attributes.get("name", ""),
        inputs=inputs,
        outputs=outputs,
        active_elements=attributes.get("activeElementsCollection", ""),
        completion_condition=condition,
        cancel_remaining=cancel,
        output_collection=attributes.get("outputCollection", ""),
        output_element=output_element,
        **job,
        **links,
    )
