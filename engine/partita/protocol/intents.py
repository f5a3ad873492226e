"""Intents per value type, as Zeebe names them: commands are imperative (`COMPLETE`), events are
past participles or progressive forms (`COMPLETED`, `ELEMENT_ACTIVATING`).

Every intent knows whether it is an event. On the wire the intent is one Avro enum holding the
union of all names; `intent_for(value_type, name)` resolves and validates the pair.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from partita.protocol.enums import ValueType

CMD = False
EVT = True


class Intent(Enum):
    """Base of the per-value-type intent enums. A member is declared as `NAME = code, EVT|CMD`."""

    is_event: bool
    __hash__ = object.__hash__  # identity: a C-level hash (Enum hashes the name in Python)

    def __new__(cls, code: int, is_event: bool) -> Any:
        member = object.__new__(cls)
        member._value_ = code
        member.is_event = is_event
        return member


class DeploymentIntent(Intent):
    CREATE = 0, CMD
    CREATED = 1, EVT
    DISTRIBUTE = 2, CMD
    DISTRIBUTED = 3, EVT
    FULLY_DISTRIBUTED = 4, EVT


class ProcessIntent(Intent):
    CREATED = 0, EVT
    DELETING = 1, EVT
    DELETED = 2, EVT


class ProcessInstanceIntent(Intent):
    CANCEL = 0, CMD
    SEQUENCE_FLOW_TAKEN = 1, EVT
    ELEMENT_ACTIVATING = 2, EVT
    ELEMENT_ACTIVATED = 3, EVT
    ELEMENT_COMPLETING = 4, EVT
    ELEMENT_COMPLETED = 5, EVT
    ELEMENT_TERMINATING = 6, EVT
    ELEMENT_TERMINATED = 7, EVT
    ACTIVATE_ELEMENT = 8, CMD
    COMPLETE_ELEMENT = 9, CMD
    TERMINATE_ELEMENT = 10, CMD
    COMPLETE_EXECUTION_LISTENER = 12, CMD  # 11 is Zeebe's ELEMENT_MIGRATED


class ProcessInstanceCreationIntent(Intent):
    CREATE = 0, CMD
    CREATED = 1, EVT
    CREATE_WITH_AWAITING_RESULT = 2, CMD


class ProcessInstanceResultIntent(Intent):
    COMPLETED = 0, EVT


class ProcessEventIntent(Intent):
    TRIGGERING = 0, EVT
    TRIGGERED = 1, EVT


class JobIntent(Intent):
    CREATED = 0, EVT
    COMPLETE = 1, CMD
    COMPLETED = 2, EVT
    TIME_OUT = 3, CMD
    TIMED_OUT = 4, EVT
    FAIL = 5, CMD
    FAILED = 6, EVT
    UPDATE_RETRIES = 7, CMD
    RETRIES_UPDATED = 8, EVT
    CANCELED = 9, EVT
    THROW_ERROR = 10, CMD
    ERROR_THROWN = 11, EVT
    RECUR_AFTER_BACKOFF = 12, CMD
    RECURRED_AFTER_BACKOFF = 13, EVT
    UPDATE_TIMEOUT = 14, CMD
    TIMEOUT_UPDATED = 15, EVT
    YIELD = 16, CMD
    YIELDED = 17, EVT


class JobBatchIntent(Intent):
    ACTIVATE = 0, CMD
    ACTIVATED = 1, EVT


class MessageIntent(Intent):
    PUBLISH = 0, CMD
    PUBLISHED = 1, EVT
    EXPIRE = 2, CMD
    EXPIRED = 3, EVT


class MessageSubscriptionIntent(Intent):
    CREATE = 0, CMD
    CREATED = 1, EVT
    CORRELATING = 2, EVT
    CORRELATE = 3, CMD
    CORRELATED = 4, EVT
    REJECT = 5, CMD
    REJECTED = 6, EVT
    DELETE = 7, CMD
    DELETED = 8, EVT


class ProcessMessageSubscriptionIntent(Intent):
    CREATING = 0, EVT
    CREATE = 1, CMD
    CREATED = 2, EVT
    CORRELATE = 3, CMD
    CORRELATED = 4, EVT
    DELETING = 5, EVT
    DELETE = 6, CMD
    DELETED = 7, EVT


class MessageStartEventSubscriptionIntent(Intent):
    CREATED = 0, EVT
    CORRELATED = 1, EVT
    DELETED = 2, EVT


class TimerIntent(Intent):
    CREATED = 0, EVT
    TRIGGER = 1, CMD
    TRIGGERED = 2, EVT
    CANCEL = 3, CMD
    CANCELED = 4, EVT


class VariableIntent(Intent):
    CREATED = 0, EVT
    UPDATED = 1, EVT


class VariableDocumentIntent(Intent):
    UPDATE = 0, CMD
    UPDATED = 1, EVT


class IncidentIntent(Intent):
    CREATED = 0, EVT
    RESOLVE = 1, CMD
    RESOLVED = 2, EVT


class ErrorIntent(Intent):
    CREATED = 0, EVT


class DecisionIntent(Intent):
    CREATED = 0, EVT
    DELETED = 1, EVT


class DecisionRequirementsIntent(Intent):
    CREATED = 0, EVT
    DELETED = 1, EVT


class DecisionEvaluationIntent(Intent):
    EVALUATED = 0, EVT
    FAILED = 1, EVT
    EVALUATE = 2, CMD


class EscalationIntent(Intent):
    ESCALATED = 0, EVT
    NOT_ESCALATED = 1, EVT


class SignalIntent(Intent):
    BROADCAST = 0, CMD
    BROADCASTED = 1, EVT


class SignalSubscriptionIntent(Intent):
    CREATED = 0, EVT
    DELETED = 1, EVT


class CompensationSubscriptionIntent(Intent):
    CREATED = 0, EVT
    TRIGGERED = 1, EVT
    COMPLETED = 2, EVT
    DELETED = 3, EVT


class FormIntent(Intent):
    CREATED = 0, EVT
    DELETED = 1, EVT


class UserTaskIntent(Intent):
    """Zeebe's user task lifecycle (numbers as Zeebe's). A client's ASSIGN, CLAIM, UPDATE and
    COMPLETE need the task CREATED; an unassign is an ASSIGN with an empty assignee."""

    CREATING = 0, EVT
    CREATED = 1, EVT
    COMPLETE = 2, CMD
    COMPLETING = 3, EVT
    COMPLETED = 4, EVT
    CANCELING = 5, EVT
    CANCELED = 6, EVT
    ASSIGN = 7, CMD
    ASSIGNING = 8, EVT
    ASSIGNED = 9, EVT
    CLAIM = 10, CMD
    UPDATE = 11, CMD
    UPDATING = 12, EVT
    UPDATED = 13, EVT
    COMPLETE_TASK_LISTENER = 15, CMD
    DENY_TASK_LISTENER = 16, CMD
    COMPLETION_DENIED = 17, EVT
    CORRECTED = 18, EVT
    ASSIGNMENT_DENIED = 19, EVT
    CLAIMING = 20, EVT
    UPDATE_DENIED = 21, EVT


INTENTS_BY_VALUE_TYPE: dict[ValueType, type[Intent]] = {
    ValueType.DEPLOYMENT: DeploymentIntent,
    ValueType.PROCESS: ProcessIntent,
    ValueType.PROCESS_INSTANCE: ProcessInstanceIntent,
    ValueType.PROCESS_INSTANCE_CREATION: ProcessInstanceCreationIntent,
    ValueType.PROCESS_INSTANCE_RESULT: ProcessInstanceResultIntent,
    ValueType.PROCESS_EVENT: ProcessEventIntent,
    ValueType.JOB: JobIntent,
    ValueType.JOB_BATCH: JobBatchIntent,
    ValueType.MESSAGE: MessageIntent,
    ValueType.MESSAGE_SUBSCRIPTION: MessageSubscriptionIntent,
    ValueType.PROCESS_MESSAGE_SUBSCRIPTION: ProcessMessageSubscriptionIntent,
    ValueType.MESSAGE_START_EVENT_SUBSCRIPTION: MessageStartEventSubscriptionIntent,
    ValueType.TIMER: TimerIntent,
    ValueType.VARIABLE: VariableIntent,
    ValueType.VARIABLE_DOCUMENT: VariableDocumentIntent,
    ValueType.INCIDENT: IncidentIntent,
    ValueType.ERROR: ErrorIntent,
    ValueType.USER_TASK: UserTaskIntent,
    ValueType.FORM: FormIntent,
    ValueType.DECISION: DecisionIntent,
    ValueType.DECISION_REQUIREMENTS: DecisionRequirementsIntent,
    ValueType.DECISION_EVALUATION: DecisionEvaluationIntent,
    ValueType.ESCALATION: EscalationIntent,
    ValueType.SIGNAL: SignalIntent,
    ValueType.SIGNAL_SUBSCRIPTION: SignalSubscriptionIntent,
    ValueType.COMPENSATION_SUBSCRIPTION: CompensationSubscriptionIntent,
}

_BY_NAME: dict[tuple[ValueType, str], Intent] = {
    (value_type, member.name): member
    for value_type, enum in INTENTS_BY_VALUE_TYPE.items()
    for member in enum
}

_SINCE_V6 = (
    "ASSIGN",
    "ASSIGNED",
    "ASSIGNING",
    "ASSIGNMENT_DENIED",
    "CANCELING",
    "CLAIM",
    "CLAIMING",
    "COMPLETE_TASK_LISTENER",
    "COMPLETING",
    "COMPLETION_DENIED",
    "CORRECTED",
    "DENY_TASK_LISTENER",
    "UPDATE_DENIED",
    "UPDATING",
    "EVALUATE",
    "EVALUATED",
    "ESCALATED",
    "NOT_ESCALATED",
    "BROADCAST",
    "BROADCASTED",
    "COMPLETE_EXECUTION_LISTENER",
)
"""Intent symbols schema v6 added (user tasks and their listeners, decision evaluations,
escalations, signals, execution listeners, compensation), after every earlier one so that the
earlier symbols keep their indexes."""

ALL_INTENT_NAMES: tuple[str, ...] = (
    tuple(sorted({name for _, name in _BY_NAME} - set(_SINCE_V6))) + _SINCE_V6
)
"""The symbols of the Avro `Intent` enum: every intent name of every value type, in the order
of the schema's versions (v1 to v5 sorted, then v6's in the order they were added)."""


def intent_for(value_type: ValueType, name: str) -> Intent | None:
    """The intent `name` of `value_type`, or None when that value type has no such intent."""
    return _BY_NAME.get((value_type, name))


CLIENT_COMMANDS: frozenset[tuple[ValueType, Intent]] = frozenset(
    {
        (ValueType.DEPLOYMENT, DeploymentIntent.CREATE),
        (ValueType.PROCESS_INSTANCE_CREATION, ProcessInstanceCreationIntent.CREATE),
        (
            ValueType.PROCESS_INSTANCE_CREATION,
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
        ),
        (ValueType.PROCESS_INSTANCE, ProcessInstanceIntent.CANCEL),
        (ValueType.JOB_BATCH, JobBatchIntent.ACTIVATE),
        (ValueType.JOB, JobIntent.COMPLETE),
        (ValueType.JOB, JobIntent.FAIL),
        (ValueType.JOB, JobIntent.THROW_ERROR),
        (ValueType.JOB, JobIntent.UPDATE_RETRIES),
        (ValueType.JOB, JobIntent.UPDATE_TIMEOUT),
        (ValueType.JOB, JobIntent.YIELD),
        (ValueType.MESSAGE, MessageIntent.PUBLISH),
        (ValueType.VARIABLE_DOCUMENT, VariableDocumentIntent.UPDATE),
        (ValueType.INCIDENT, IncidentIntent.RESOLVE),
        (ValueType.USER_TASK, UserTaskIntent.ASSIGN),
        (ValueType.USER_TASK, UserTaskIntent.CLAIM),
        (ValueType.USER_TASK, UserTaskIntent.UPDATE),
        (ValueType.USER_TASK, UserTaskIntent.COMPLETE),
        (ValueType.DECISION_EVALUATION, DecisionEvaluationIntent.EVALUATE),
        (ValueType.SIGNAL, SignalIntent.BROADCAST),
    }
)
"""The commands a client may send (Zeebe's gateway API). Every other command intent is the
engine's own (element lifecycle, distribution, subscriptions, due-date triggers) and is
rejected INVALID_ARGUMENT when it arrives on the ingress topic. Allow-listed, so an intent added
later is internal until it is deliberately listed here."""


def internal_commands() -> list[tuple[ValueType, Intent]]:
    """Every command intent only the engine may write, in value type order (for the docs)."""
    return [
        (value_type, member)
        for value_type, enum in INTENTS_BY_VALUE_TYPE.items()
        for member in enum
        if not member.is_event and (value_type, member) not in CLIENT_COMMANDS
    ]
