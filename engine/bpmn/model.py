"""The executable model: what the engine needs of a BPMN process, validated and immutable.

Expressions are kept as written (`=` prefix for FEEL, anything else static); the FEEL package
compiles them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.protocol.enums import BpmnElementType, BpmnEventType


@dataclass(frozen=True, slots=True)
class IoMapping:
    """`zeebe:input` / `zeebe:output`: evaluate `source`, store it as `target`."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class SequenceFlow:
    id: str
    source: str
    target: str
    condition: str | None = None
    """The condition expression (FEEL with a leading `=`), or None for an unconditional flow."""


@dataclass(frozen=True, slots=True)
class FlowNode:
    """A start or end event, task, manual task or parallel gateway: nothing beyond the flow."""

    id: str
    element_type: BpmnElementType
    name: str = ""
    event_type: BpmnEventType = BpmnEventType.UNSPECIFIED
    incoming: tuple[str, ...] = ()
    outgoing: tuple[str, ...] = ()
    inputs: tuple[IoMapping, ...] = ()
    outputs: tuple[IoMapping, ...] = ()


@dataclass(frozen=True, slots=True)
class ServiceTask(FlowNode):
    job_type: str = ""
    """`zeebe:taskDefinition type`: static text or a FEEL expression."""
    retries: str = "3"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ExclusiveGateway(FlowNode):
    default_flow: str | None = None


@dataclass(frozen=True, slots=True)
class Process:
    """One executable `<bpmn:process>`."""

    id: str
    name: str
    elements: dict[str, FlowNode] = field(default_factory=dict)
    flows: dict[str, SequenceFlow] = field(default_factory=dict)
    start_event: str = ""
    """The id of the none start event the instance starts from."""

    def element(self, element_id: str) -> FlowNode:
        return self.elements[element_id]

    def outgoing(self, element_id: str) -> list[SequenceFlow]:
        return [self.flows[f] for f in self.elements[element_id].outgoing]
