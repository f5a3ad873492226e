"""Activities and their extension elements: tasks whose work is a job (`zeebe:taskDefinition`,
`zeebe:taskHeaders`; job-based user tasks), script tasks (`zeebe:script`), call activities
(`zeebe:calledElement`), `zeebe:ioMapping`, and multi-instance loop characteristics
(`zeebe:loopCharacteristics`)."""

from __future__ import annotations

from typing import Any

from partita.bpmn import listeners
from partita.bpmn.errors import Problem
from partita.bpmn.model import (
    BusinessRuleTask,
    CallActivity,
    FlowNode,
    IoMapping,
    JobWorkerElement,
    MultiInstance,
    ScriptTask,
    UserTask,
)
from partita.bpmn.xml import BPMN, ZEEBE, Node
from partita.elements import BpmnElementType, BpmnEventType

_MULTI_INSTANCE_HOSTS = {
    "serviceTask",
    "sendTask",
    "scriptTask",
    "businessRuleTask",
    "userTask",
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


JOB_BASED_USER_TASK = "io.camunda.zeebe:userTask"
"""The job type of a user task without `zeebe:userTask` (Zeebe's job-based user task)."""
_USER_TASK_HEADERS = "io.camunda.zeebe:"
_ASSIGNMENT = ("assignee", "candidateGroups", "candidateUsers")
_SCHEDULE = ("dueDate", "followUpDate")
LIST_HEADERS = frozenset(f"{_USER_TASK_HEADERS}{name}" for name in _ASSIGNMENT[1:])
"""Headers whose value is a list of names (static text separated by commas, or FEEL yielding
a list of strings), written to the job as a JSON array, as Zeebe writes them."""


def job_worker(
    node: Node,
    problems: list[Problem],
    common: dict[str, Any],
    element_type: BpmnElementType,
    event_type: BpmnEventType = BpmnEventType.UNSPECIFIED,
) -> JobWorkerElement | None:
    """A service, send, script or business rule task, or a message throw or end event, whose
    work is a job: `zeebe:taskDefinition` (type, retries) and `zeebe:taskHeaders`."""
    element_id = node.attributes["id"]
    extensions = extension_elements(node)
    definition = extensions.find(ZEEBE + "taskDefinition") if extensions is not None else None
    if definition is None or not definition.attributes.get("type", "").strip():
        problems.append(
            Problem(element_id, f'a bpmn:{node.local} needs <zeebe:taskDefinition type="..."/>')
        )
        return None
    return JobWorkerElement(
        element_type=element_type,
        event_type=event_type,
        job_type=definition.attributes["type"].strip(),
        retries=definition.attributes.get("retries", "3").strip() or "3",
        headers=task_headers(element_id, extensions, problems),
        **common,
    )


def has_task_definition(node: Node) -> bool:
    extensions = extension_elements(node)
    return extensions is not None and extensions.find(ZEEBE + "taskDefinition") is not None


def job_based_user_task(
    node: Node, problems: list[Problem], common: dict[str, Any]
) -> JobWorkerElement:
    """A user task without `zeebe:userTask`: a job of type `io.camunda.zeebe:userTask` whose
    headers carry the assignment, the schedule and the form key (evaluated at creation when
    they are FEEL), beside the task's own headers."""
    element_id = node.attributes["id"]
    extensions = extension_elements(node)
    if extensions is not None and extensions.find(ZEEBE + "taskListeners") is not None:
        problems.append(
            Problem(element_id, "Task listeners are only allowed on Camunda user tasks.")
        )
    evaluated: list[tuple[str, str]] = []
    for tag, names in (("assignmentDefinition", _ASSIGNMENT), ("taskSchedule", _SCHEDULE)):
        found = extensions.find(ZEEBE + tag) if extensions is not None else None
        for name in names:
            text = found.attributes.get(name, "").strip() if found is not None else ""
            if text:
                evaluated.append((_USER_TASK_HEADERS + name, text))
    form = extensions.find(ZEEBE + "formDefinition") if extensions is not None else None
    form_key = form.attributes.get("formKey", "").strip() if form is not None else ""
    if form_key:
        evaluated.append((_USER_TASK_HEADERS + "formKey", form_key))
    return JobWorkerElement(
        element_type=BpmnElementType.USER_TASK,
        job_type=JOB_BASED_USER_TASK,
        retries="1",
        headers=task_headers(element_id, extensions, problems),
        evaluated_headers=tuple(evaluated),
        **common,
    )


def user_task(node: Node, problems: list[Problem], common: dict[str, Any]) -> FlowNode | None:
    """A Zeebe user task with `zeebe:userTask`, else a job-based one."""
    extensions = extension_elements(node)
    if extensions is None or extensions.find(ZEEBE + "userTask") is None:
        return job_based_user_task(node, problems, common)
    element_id = node.attributes["id"]
    properties: dict[str, str] = {}
    for tag, names in (("assignmentDefinition", _ASSIGNMENT), ("taskSchedule", _SCHEDULE)):
        found = extensions.find(ZEEBE + tag)
        for name in names:
            properties[name] = found.attributes.get(name, "").strip() if found is not None else ""
    priority_node = extensions.find(ZEEBE + "priorityDefinition")
    priority = (
        priority_node.attributes.get("priority", "").strip() if priority_node is not None else ""
    )
    priority = priority or "50"
    if not priority.startswith("=") and not (priority.isdigit() and 0 <= int(priority) <= 100):
        problems.append(Problem(element_id, f"priority must be 0 to 100, not '{priority}'"))
    form = _form(element_id, extensions.find(ZEEBE + "formDefinition"), problems)
    return UserTask(
        element_type=BpmnElementType.USER_TASK,
        assignee=properties["assignee"],
        candidate_groups=properties["candidateGroups"],
        candidate_users=properties["candidateUsers"],
        due_date=properties["dueDate"],
        follow_up_date=properties["followUpDate"],
        priority=priority,
        **form,
        headers=task_headers(element_id, extensions, problems),
        task_listeners=listeners.task_listeners(element_id, extensions, problems),
        **common,
    )


_BINDINGS = ("latest", "deployment", "versionTag")


def _form(element_id: str, form: Node | None, problems: list[Problem]) -> dict[str, Any]:
    """A Zeebe user task's `zeebe:formDefinition`: a deployed form's `formId` (with its
    binding) or an `externalReference`, exactly one of them."""
    if form is None:
        return {}
    attributes = {name: value.strip() for name, value in form.attributes.items()}
    form_id, external = attributes.get("formId", ""), attributes.get("externalReference", "")
    if attributes.get("formKey"):
        problems.append(
            Problem(element_id, "formKey is for job-based user tasks; link a form with formId")
        )
    if bool(form_id) == bool(external):
        problems.append(
            Problem(
                element_id,
                "Exactly one of the attributes 'formId, externalReference' must be present and"
                " not blank for native user tasks",
            )
        )
    binding = attributes.get("bindingType", "") or "latest"
    if binding not in _BINDINGS:
        problems.append(
            Problem(
                element_id, f"bindingType must be one of {', '.join(_BINDINGS)}, not '{binding}'"
            )
        )
    tag = attributes.get("versionTag", "")
    if binding == "versionTag" and not tag:
        problems.append(Problem(element_id, 'bindingType "versionTag" needs a versionTag'))
    return {
        "form_id": form_id,
        "form_binding": binding,
        "form_version_tag": tag,
        "external_form_reference": external,
    }


def business_rule_task(
    node: Node, problems: list[Problem], common: dict[str, Any]
) -> FlowNode | None:
    """`zeebe:calledDecision` (a deployed decision, evaluated by the engine), or a job."""
    element_id = node.attributes["id"]
    extensions = extension_elements(node)
    called = extensions.find(ZEEBE + "calledDecision") if extensions is not None else None
    if (called is None) == (not has_task_definition(node)):
        problems.append(
            Problem(
                element_id,
                "Must have either one 'zeebe:calledDecision' or one 'zeebe:taskDefinition'"
                " extension element",
            )
        )
        return None
    if called is None:
        return job_worker(node, problems, common, BpmnElementType.BUSINESS_RULE_TASK)
    attributes = {name: value.strip() for name, value in called.attributes.items()}
    decision_id, result = attributes.get("decisionId", ""), attributes.get("resultVariable", "")
    if not decision_id or not result:
        problems.append(
            Problem(element_id, "zeebe:calledDecision needs a decisionId and a resultVariable")
        )
    binding = attributes.get("bindingType", "") or "latest"
    if binding not in _BINDINGS:
        problems.append(Problem(element_id, f"bindingType must be one of {', '.join(_BINDINGS)}"))
    tag = attributes.get("versionTag", "")
    if binding == "versionTag" and not tag:
        problems.append(Problem(element_id, 'bindingType "versionTag" needs a versionTag'))
    return BusinessRuleTask(
        element_type=BpmnElementType.BUSINESS_RULE_TASK,
        decision_id=decision_id,
        result_variable=result,
        binding=binding,
        version_tag=tag,
        **common,
    )


def script_task(node: Node, problems: list[Problem], common: dict[str, Any]) -> FlowNode | None:
    """`zeebe:script` (a FEEL expression and its result variable), else a job."""
    element_id = node.attributes["id"]
    extensions = extension_elements(node)
    script = extensions.find(ZEEBE + "script") if extensions is not None else None
    if script is None:
        if not has_task_definition(node):
            problems.append(
                Problem(
                    element_id,
                    'a script task needs <zeebe:script expression="=..." resultVariable="..."/>'
                    ' or <zeebe:taskDefinition type="..."/>',
                )
            )
            return None
        return job_worker(node, problems, common, BpmnElementType.SCRIPT_TASK)
    expression = script.attributes.get("expression", "").strip()
    result = script.attributes.get("resultVariable", "").strip()
    if not expression.startswith("=") or not result:
        problems.append(
            Problem(
                element_id,
                "zeebe:script needs a FEEL expression (starting with '=') and a resultVariable",
            )
        )
        return None
    return ScriptTask(
        element_type=BpmnElementType.SCRIPT_TASK,
        expression=expression,
        result_variable=result,
        **common,
    )


def task_headers(
    element_id: str, extensions: Node | None, problems: list[Problem]
) -> tuple[tuple[str, str], ...]:
    headers: list[tuple[str, str]] = []
    header_list = extensions.find(ZEEBE + "taskHeaders") if extensions is not None else None
    for header in header_list.find_all(ZEEBE + "header") if header_list is not None else []:
        key = header.attributes.get("key", "")
        if not key:
            problems.append(Problem(element_id, "a zeebe:header needs a key"))
            continue
        headers.append((key, header.attributes.get("value", "")))
    return tuple(headers)


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
