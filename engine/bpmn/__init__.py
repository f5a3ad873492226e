"""BPMN 2.0 XML (as Camunda Modeler writes it) -> a validated executable model.

No Kafka, no state: `parse_bpmn(bytes)` returns the executable processes of a resource or
raises `BpmnValidationError` listing every problem with its element id.
"""

from engine.bpmn.errors import BpmnError, BpmnValidationError, Problem
from engine.bpmn.model import (
    ExclusiveGateway,
    FlowNode,
    IoMapping,
    Process,
    SequenceFlow,
    ServiceTask,
)
from engine.bpmn.parser import parse_bpmn

__all__ = [
    "BpmnError",
    "BpmnValidationError",
    "ExclusiveGateway",
    "FlowNode",
    "IoMapping",
    "Problem",
    "Process",
    "SequenceFlow",
    "ServiceTask",
    "parse_bpmn",
]
