"""Embedded and event subprocesses (`bpmn:subProcess`, `triggeredByEvent`): an embedded one
starts at its one none start event; an event subprocess has one message, timer, error,
escalation or signal start event and no sequence flows."""

from __future__ import annotations

from typing import Any

from partita.bpmn import activities
from partita.bpmn.errors import Problem
from partita.bpmn.model import EventNode, FlowNode, SubProcess
from partita.bpmn.xml import Node
from partita.elements import BpmnElementType


def subprocess(
    node: Node, direct: list[FlowNode], links: dict[str, Any], problems: list[Problem]
) -> SubProcess:
    """The model of a subprocess whose inner elements (`direct`) are parsed."""
    element_id = node.attributes["id"]
    inputs, outputs = activities.io_mappings(node, problems)
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
                    element_id,
                    "an event subprocess needs one message, timer, error, signal or escalation"
                    " start event",
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
        multi_instance=activities.loop(node, problems),
        **links,
    )
