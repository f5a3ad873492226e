"""The BPMN vocabulary the model and the records share: element types and event types, in
Zeebe's names (the symbols of the Avro enums of the same names, which a test keeps identical).

A shared kernel, like `partita.errors`: `partita.bpmn` names its elements with these and
`partita.protocol` writes them in records, so neither imports the other. Nothing else lives here.
"""

from __future__ import annotations

from enum import Enum


class BpmnElementType(Enum):
    """The BPMN element a process instance record is about (Zeebe's names)."""

    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    UNSPECIFIED = "UNSPECIFIED"
    PROCESS = "PROCESS"
    SUB_PROCESS = "SUB_PROCESS"
    EVENT_SUB_PROCESS = "EVENT_SUB_PROCESS"
    START_EVENT = "START_EVENT"
    INTERMEDIATE_CATCH_EVENT = "INTERMEDIATE_CATCH_EVENT"
    INTERMEDIATE_THROW_EVENT = "INTERMEDIATE_THROW_EVENT"
    BOUNDARY_EVENT = "BOUNDARY_EVENT"
    END_EVENT = "END_EVENT"
    SERVICE_TASK = "SERVICE_TASK"
    RECEIVE_TASK = "RECEIVE_TASK"
    USER_TASK = "USER_TASK"
    MANUAL_TASK = "MANUAL_TASK"
    TASK = "TASK"
    SCRIPT_TASK = "SCRIPT_TASK"
    SEND_TASK = "SEND_TASK"
    BUSINESS_RULE_TASK = "BUSINESS_RULE_TASK"
    EXCLUSIVE_GATEWAY = "EXCLUSIVE_GATEWAY"
    PARALLEL_GATEWAY = "PARALLEL_GATEWAY"
    INCLUSIVE_GATEWAY = "INCLUSIVE_GATEWAY"
    EVENT_BASED_GATEWAY = "EVENT_BASED_GATEWAY"
    SEQUENCE_FLOW = "SEQUENCE_FLOW"
    MULTI_INSTANCE_BODY = "MULTI_INSTANCE_BODY"
    CALL_ACTIVITY = "CALL_ACTIVITY"
    AD_HOC_SUB_PROCESS = "AD_HOC_SUB_PROCESS"
    AD_HOC_SUB_PROCESS_INNER_INSTANCE = "AD_HOC_SUB_PROCESS_INNER_INSTANCE"
    """What an ad-hoc subprocess activates each element in (`<id>#innerInstance`, Zeebe 8.8):
    the scope of its path and of the variables the activation gave it."""


class BpmnEventType(Enum):
    """The event definition of an event element (Zeebe's names)."""

    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    UNSPECIFIED = "UNSPECIFIED"
    NONE = "NONE"
    MESSAGE = "MESSAGE"
    TIMER = "TIMER"
    ERROR = "ERROR"
    TERMINATE = "TERMINATE"
    SIGNAL = "SIGNAL"
    ESCALATION = "ESCALATION"
    LINK = "LINK"
    COMPENSATION = "COMPENSATION"
    CONDITIONAL = "CONDITIONAL"
