"""BPMN 2.0 XML (as Camunda Modeler writes it) -> a validated executable model.

No Kafka, no state: `parse_bpmn(bytes)` returns the executable processes of a resource or
raises `BpmnValidationError` listing every problem with its element id.
"""

from partita.bpmn.errors import BpmnError, BpmnValidationError, Problem
from partita.bpmn.model import (
    AdHocSubProcess,
    BusinessRuleTask,
    CallActivity,
    ErrorDefinition,
    EscalationDefinition,
    EventBasedGateway,
    EventNode,
    ExclusiveGateway,
    ExecutionListener,
    FlowNode,
    InclusiveGateway,
    IoMapping,
    JobWorkerElement,
    LinkEvent,
    MessageDefinition,
    MultiInstance,
    Process,
    ScriptTask,
    SequenceFlow,
    SignalDefinition,
    SubProcess,
    TaskListener,
    TimerDefinition,
    UserTask,
)
from partita.bpmn.parser import parse_bpmn

__all__ = [
    "AdHocSubProcess",
    "BpmnError",
    "BpmnValidationError",
    "BusinessRuleTask",
    "CallActivity",
    "ErrorDefinition",
    "EscalationDefinition",
    "EventBasedGateway",
    "EventNode",
    "ExclusiveGateway",
    "ExecutionListener",
    "FlowNode",
    "InclusiveGateway",
    "IoMapping",
    "JobWorkerElement",
    "LinkEvent",
    "MessageDefinition",
    "MultiInstance",
    "Problem",
    "Process",
    "ScriptTask",
    "SequenceFlow",
    "SignalDefinition",
    "SubProcess",
    "TaskListener",
    "TimerDefinition",
    "UserTask",
    "parse_bpmn",
]
