"""Record types, value types and rejection types, named as Zeebe names them (the BPMN element
and event types are the shared ones of `partita.elements`, re-exported here).

The Avro enums in `avro/` carry the same symbols; a test keeps the two identical.

Reading a member off its class (`RecordType.EVENT`) costs ~130 ns on Python 3.11, five times a
module global: `EnumType.__getattr__` sends every class attribute through the slow path (3.12
drops it). Modules on the per-record path bind the members they compare against to module
names once (`_EVENT = RecordType.EVENT`); comparing members by identity stays the rule.
"""

from __future__ import annotations

from enum import Enum

from partita.elements import BpmnElementType, BpmnEventType


class RecordType(Enum):
    """What a record is: a request (COMMAND), a fact (EVENT) or a refused request."""

    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    COMMAND = "COMMAND"
    EVENT = "EVENT"
    COMMAND_REJECTION = "COMMAND_REJECTION"


class ValueType(Enum):
    """Which kind of value a record carries; selects the Avro branch of `value` and the intents."""

    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    DEPLOYMENT = "DEPLOYMENT"
    PROCESS = "PROCESS"
    PROCESS_INSTANCE = "PROCESS_INSTANCE"
    PROCESS_INSTANCE_CREATION = "PROCESS_INSTANCE_CREATION"
    PROCESS_INSTANCE_RESULT = "PROCESS_INSTANCE_RESULT"
    PROCESS_EVENT = "PROCESS_EVENT"
    JOB = "JOB"
    JOB_BATCH = "JOB_BATCH"
    MESSAGE = "MESSAGE"
    MESSAGE_SUBSCRIPTION = "MESSAGE_SUBSCRIPTION"
    PROCESS_MESSAGE_SUBSCRIPTION = "PROCESS_MESSAGE_SUBSCRIPTION"
    MESSAGE_START_EVENT_SUBSCRIPTION = "MESSAGE_START_EVENT_SUBSCRIPTION"
    TIMER = "TIMER"
    VARIABLE = "VARIABLE"
    VARIABLE_DOCUMENT = "VARIABLE_DOCUMENT"
    INCIDENT = "INCIDENT"
    ERROR = "ERROR"
    USER_TASK = "USER_TASK"
    FORM = "FORM"
    DECISION = "DECISION"
    DECISION_REQUIREMENTS = "DECISION_REQUIREMENTS"
    DECISION_EVALUATION = "DECISION_EVALUATION"
    ESCALATION = "ESCALATION"
    SIGNAL = "SIGNAL"
    SIGNAL_SUBSCRIPTION = "SIGNAL_SUBSCRIPTION"
    COMPENSATION_SUBSCRIPTION = "COMPENSATION_SUBSCRIPTION"


class RejectionType(Enum):
    """Why a command was refused. The rejection reason says the details."""

    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    INVALID_STATE = "INVALID_STATE"
    PROCESSING_ERROR = "PROCESSING_ERROR"
    EXCEEDED_BATCH_RECORD_SIZE = "EXCEEDED_BATCH_RECORD_SIZE"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    """Backpressure: the partition is over a limit and did not process the command; safe to
    send again later (the clients do, with back-off)."""


class VariableDocumentUpdateSemantic(Enum):
    """LOCAL sets every variable on the given scope; PROPAGATE updates where a name is defined."""

    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    LOCAL = "LOCAL"
    PROPAGATE = "PROPAGATE"


class ErrorType(Enum):
    """Why an incident was raised (Zeebe's names)."""

    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    UNKNOWN = "UNKNOWN"
    IO_MAPPING_ERROR = "IO_MAPPING_ERROR"
    JOB_NO_RETRIES = "JOB_NO_RETRIES"
    CONDITION_ERROR = "CONDITION_ERROR"
    EXTRACT_VALUE_ERROR = "EXTRACT_VALUE_ERROR"
    CALLED_ELEMENT_ERROR = "CALLED_ELEMENT_ERROR"
    UNHANDLED_ERROR_EVENT = "UNHANDLED_ERROR_EVENT"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    RESOURCE_NOT_FOUND = "RESOURCE_NOT_FOUND"
    FORM_NOT_FOUND = "FORM_NOT_FOUND"
    DECISION_EVALUATION_ERROR = "DECISION_EVALUATION_ERROR"
    CALLED_DECISION_ERROR = "CALLED_DECISION_ERROR"
    EXECUTION_LISTENER_NO_RETRIES = "EXECUTION_LISTENER_NO_RETRIES"
    TASK_LISTENER_NO_RETRIES = "TASK_LISTENER_NO_RETRIES"
    AD_HOC_SUB_PROCESS_NO_RETRIES = "AD_HOC_SUB_PROCESS_NO_RETRIES"


class JobKind(Enum):
    """What a job does (Zeebe's names): an element's work, or a listener's."""

    __hash__ = object.__hash__

    BPMN_ELEMENT = "BPMN_ELEMENT"
    EXECUTION_LISTENER = "EXECUTION_LISTENER"
    TASK_LISTENER = "TASK_LISTENER"
    AD_HOC_SUB_PROCESS = "AD_HOC_SUB_PROCESS"


class JobListenerEventType(Enum):
    """The event a listener job runs on; UNSPECIFIED for an element's job."""

    __hash__ = object.__hash__

    UNSPECIFIED = "UNSPECIFIED"
    START = "START"
    END = "END"
    COMPLETING = "COMPLETING"
    ASSIGNING = "ASSIGNING"
    UPDATING = "UPDATING"
    CREATING = "CREATING"
    CANCELING = "CANCELING"


__all__ = [
    "BpmnElementType",
    "BpmnEventType",
    "ErrorType",
    "JobKind",
    "JobListenerEventType",
    "RecordType",
    "RejectionType",
    "ValueType",
    "VariableDocumentUpdateSemantic",
]
