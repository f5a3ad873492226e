"""Execution listeners (`zeebe:executionListeners`): the jobs an element or a process waits for
when it starts and when it ends, refused where Zeebe refuses them; and task listeners
(`zeebe:taskListeners`), the jobs a Zeebe user task's transitions wait for."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from partita.bpmn.errors import Problem
from partita.bpmn.model import EventNode, ExecutionListener, FlowNode, TaskListener
from partita.bpmn.xml import BPMN, ZEEBE, Node
from partita.elements import BpmnElementType

Listeners = tuple[tuple[ExecutionListener, ...], tuple[ExecutionListener, ...]]

_NO_START = {
    BpmnElementType.START_EVENT: "start events",
    BpmnElementType.BOUNDARY_EVENT: "boundary events",
}
_GATEWAYS = {
    BpmnElementType.EXCLUSIVE_GATEWAY,
    BpmnElementType.PARALLEL_GATEWAY,
    BpmnElementType.INCLUSIVE_GATEWAY,
    BpmnElementType.EVENT_BASED_GATEWAY,
}


def execution_listeners(node: Node, problems: list[Problem]) -> Listeners:
    """The start and end listeners of `node` (an element or a process), in model order."""
    extensions = node.find(BPMN + "extensionElements")
    listeners = extensions.find(ZEEBE + "executionListeners") if extensions is not None else None
    if listeners is None:
        return (), ()
    element_id = node.attributes.get("id", "")
    found: dict[str, list[ExecutionListener]] = {"start": [], "end": []}
    for listener in listeners.find_all(ZEEBE + "executionListener"):
        event_type = listener.attributes.get("eventType", "").strip()
        job_type = listener.attributes.get("type", "").strip()
        retries = listener.attributes.get("retries", "").strip() or "3"
        if event_type not in found:
            problems.append(
                Problem(
                    element_id,
                    f"an execution listener's eventType must be start or end, not '{event_type}'",
                )
            )
            continue
        if not job_type:
            problems.append(Problem(element_id, "an execution listener needs a type"))
            continue
        if not retries.startswith("=") and not retries.isdigit():
            problems.append(
                Problem(
                    element_id,
                    f"an execution listener's retries must be a number or FEEL, not '{retries}'",
                )
            )
            continue
        found[event_type].append(ExecutionListener(job_type, retries))
    for event_type, declared in found.items():
        for job_type in dict.fromkeys(listener.job_type for listener in declared):
            count = sum(1 for listener in declared if listener.job_type == job_type)
            if count > 1:
                problems.append(
                    Problem(
                        element_id,
                        f"Found '{count}' duplicates based on eventType[{event_type}] and"
                        f" type[{job_type}], these combinations should be unique.",
                    )
                )
    return tuple(found["start"]), tuple(found["end"])


_Element = TypeVar("_Element", bound=FlowNode)


def with_listeners(element: _Element, listeners: Listeners, problems: list[Problem]) -> _Element:
    """`element` with its listeners, or unchanged with a problem where Zeebe allows none:
    start listeners on start and boundary events, end listeners on gateways and error end
    events."""
    starts, ends = listeners
    if not starts and not ends:
        return element
    kind = element.element_type
    if starts and kind in _NO_START:
        problems.append(
            Problem(
                element.id,
                f"Execution listeners of type 'start' are not supported by {_NO_START[kind]}",
            )
        )
    if ends and kind in _GATEWAYS:
        problems.append(
            Problem(
                element.id, "Execution listeners of type 'end' are not supported by gateway element"
            )
        )
    if (
        ends
        and kind is BpmnElementType.END_EVENT
        and isinstance(element, EventNode)
        and element.error is not None
    ):
        problems.append(
            Problem(
                element.id,
                "Execution listeners of type 'end' are not supported by [error] end events",
            )
        )
    return replace(element, start_listeners=starts, end_listeners=ends)


TASK_EVENTS = ("creating", "assigning", "updating", "completing", "canceling")
_OLD_TASK_EVENTS = {
    "create": "creating",
    "assignment": "assigning",
    "update": "updating",
    "complete": "completing",
    "cancel": "canceling",
}
"""Zeebe 8.6's names, still read (and meaning the new ones), as Zeebe reads them."""


def task_listeners(
    element_id: str, extensions: Node, problems: list[Problem]
) -> tuple[TaskListener, ...]:
    """A Zeebe user task's `zeebe:taskListeners`, in model order."""
    listeners = extensions.find(ZEEBE + "taskListeners")
    if listeners is None:
        return ()
    found: list[TaskListener] = []
    for listener in listeners.find_all(ZEEBE + "taskListener"):
        event_type = listener.attributes.get("eventType", "").strip()
        event_type = _OLD_TASK_EVENTS.get(event_type, event_type)
        job_type = listener.attributes.get("type", "").strip()
        retries = listener.attributes.get("retries", "").strip() or "3"
        if event_type not in TASK_EVENTS:
            problems.append(
                Problem(
                    element_id,
                    f"a task listener's eventType must be one of {', '.join(TASK_EVENTS)},"
                    f" not '{event_type}'",
                )
            )
            continue
        if not job_type:
            problems.append(Problem(element_id, "Attribute 'type' must be present and not empty"))
            continue
        if not retries.startswith("=") and not retries.isdigit():
            problems.append(
                Problem(
                    element_id,
                    f"a task listener's retries must be a number or FEEL, not '{retries}'",
                )
            )
            continue
        found.append(TaskListener(event_type, job_type, retries))
    return tuple(found)
