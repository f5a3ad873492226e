"""Column family declarations: a name, a key codec and a value codec each.

`ColumnFamilies` is the one place the engine's column families are declared; adding one is one
line there. The numeric order of declaration is also the order of the state digest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from partita.state.keys import (
    CompositeKey,
    ForeignKey,
    IntKey,
    KeyCodec,
    LongKey,
    StrKey,
)
from partita.state.stored import (
    CompensationSubscription,
    DeployedDecision,
    DeployedDrg,
    DeployedForm,
    DeployedProcessRecord,
    ElementInstance,
    EventTrigger,
    Incident,
    Job,
    Message,
    MessageStartedInstance,
    MessageStartSubscription,
    MessageSubscription,
    ProcessMessageSubscription,
    SignalSubscription,
    TaskTransition,
    Timer,
    UserTask,
)
from partita.state.values import ValueCodec

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class ColumnFamilyDef(Generic[K, V]):
    """A column family: its RocksDB name and how its keys and values are encoded."""

    name: str
    key: KeyCodec[K]
    value: ValueCodec[V]
    queue: bool = False
    """Entries are taken from the front and deleted (activatable jobs, due dates): scans
    start past the front's deletions (see `Overlay`), which RocksDB would otherwise walk."""
    doc: str = ""
    """What a key maps to, for docs/internals/state.md."""


VALUE_VERSION = 2
"""The version byte of every column family's values in this layout (1 was JSON)."""


def cf(
    name: str,
    key: KeyCodec[K],
    value_type: type[V],
    version: int = VALUE_VERSION,
    *,
    queue: bool = False,
    doc: str = "",
) -> ColumnFamilyDef[K, V]:
    return ColumnFamilyDef(name, key, ValueCodec(value_type, version), queue, doc)


_LONG = LongKey()
_STR = StrKey()
_INSTANCE = ForeignKey(LongKey(), "element_instance")
_NIL_VALUE: type[None] = type(None)


class ColumnFamilies:
    """Every column family of a partition, each with one value type (`partita.state.stored`
    for the structured ones)."""

    META = cf("meta", _STR, int, doc="positions, the key counter (the layout is raw bytes)")
    PROCESS_BY_KEY = cf(
        "process_by_key", _LONG, DeployedProcessRecord, doc="definition key -> the process"
    )
    PROCESS_RESOURCE = cf("process_resource", _LONG, str, doc="definition key -> its BPMN XML")
    PROCESS_BY_ID_AND_VERSION = cf(
        "process_by_id_and_version",
        CompositeKey(_STR, IntKey()),
        int,
        doc="(bpmnProcessId, version) -> definition key",
    )
    LATEST_PROCESS_VERSION = cf(
        "latest_process_version", _STR, int, doc="bpmnProcessId -> its latest version"
    )
    ELEMENT_INSTANCE = cf(
        "element_instance", _LONG, ElementInstance, doc="element instance key -> the instance"
    )
    TAKEN_FLOWS = cf(
        "taken_flows",
        CompositeKey(_LONG, _STR, _STR),
        int,
        doc="(flow scope, gateway id, flow id) -> arrivals at a parallel join",
    )
    ELEMENT_INSTANCE_CHILDREN = cf(
        "element_instance_children",
        CompositeKey(_INSTANCE, _LONG),
        _NIL_VALUE,
        doc="(scope, child): the active children of a scope",
    )
    JOB = cf("job", _LONG, Job, doc="job key -> the job")
    JOB_STATE = cf("job_state", _LONG, str, doc="job key -> ACTIVATABLE, ACTIVATED, FAILED, ...")
    JOB_ACTIVATABLE = cf(
        "job_activatable",
        CompositeKey(_STR, _LONG),
        _NIL_VALUE,
        queue=True,
        doc="(job type, job key): activatable jobs, oldest first",
    )
    JOB_DEADLINE = cf(
        "job_deadline",
        CompositeKey(_LONG, _LONG),
        _NIL_VALUE,
        queue=True,
        doc="(deadline, job key): activated jobs by when they time out",
    )
    JOB_BACKOFF = cf(
        "job_backoff",
        CompositeKey(_LONG, _LONG),
        _NIL_VALUE,
        queue=True,
        doc="(recurring time, job key): failed jobs waiting out a retry back-off",
    )
    JOB_PUSHED = cf("job_pushed", _STR, int, doc="job type -> pushed jobs not yet finished")
    JOB_ACTIVATABLE_COUNT = cf(
        "job_activatable_count", _STR, int, doc="job type -> activatable jobs"
    )
    MESSAGE = cf("message", _LONG, Message, doc="message key -> a buffered message")
    MESSAGE_CORRELATION = cf(
        "message_correlation",
        CompositeKey(_STR, _STR, _LONG),
        _NIL_VALUE,
        doc="(name, correlation key, message key): buffered messages, oldest first",
    )
    MESSAGE_DEADLINE = cf(
        "message_deadline",
        CompositeKey(_LONG, _LONG),
        _NIL_VALUE,
        queue=True,
        doc="(deadline, message key): buffered messages by when they expire",
    )
    MESSAGE_ID = cf(
        "message_id",
        CompositeKey(_STR, _STR, _STR),
        int,
        doc="(name, correlation key, message id) -> message key: one message per id",
    )
    MESSAGE_SUBSCRIPTION = cf(
        "message_subscription",
        CompositeKey(_STR, _STR, _LONG),
        MessageSubscription,
        doc="(name, correlation key, element instance key) -> a waiting element",
    )
    PROCESS_MESSAGE_SUBSCRIPTION = cf(
        "process_message_subscription",
        CompositeKey(_INSTANCE, _STR),
        ProcessMessageSubscription,
        doc="(element instance key, message name) -> what the element opened",
    )
    COMPENSATION_SUBSCRIPTION = cf(
        "compensation_subscription",
        CompositeKey(_LONG, _LONG),
        CompensationSubscription,
        doc="(process instance key, subscription key) -> a completed activity its scope can"
        " compensate",
    )
    SIGNAL_SUBSCRIPTION = cf(
        "signal_subscription",
        CompositeKey(_STR, _LONG, _STR),
        SignalSubscription,
        doc="(signal name, owner, catch event id) -> what waits for the signal; the owner is"
        " the element instance that opened it, or the process definition of a start event",
    )
    SIGNAL_SUBSCRIPTION_BY_OWNER = cf(
        "signal_subscription_by_owner",
        CompositeKey(_LONG, _STR, _STR),
        _NIL_VALUE,
        doc="(owner, signal name, catch event id): the signal subscriptions an owner holds",
    )
    MESSAGE_START_EVENT_SUBSCRIPTION = cf(
        "message_start_event_subscription",
        CompositeKey(_STR, _LONG),
        MessageStartSubscription,
        doc="(message name, definition key) -> a message start event",
    )
    MESSAGE_CORRELATED = cf(
        "message_correlated",
        CompositeKey(_LONG, _STR),
        _NIL_VALUE,
        doc="(message key, bpmnProcessId): a message correlates once per process",
    )
    MESSAGE_START_INSTANCE = cf(
        "message_start_instance",
        CompositeKey(_STR, _STR),
        int,
        doc="(bpmnProcessId, correlation key) -> the active instance a message started",
    )
    MESSAGE_START_BY_INSTANCE = cf(
        "message_start_by_instance",
        _LONG,
        MessageStartedInstance,
        doc="process instance key -> the correlation key its message start holds",
    )
    EVENT_TRIGGER = cf(
        "event_trigger",
        CompositeKey(_LONG, _LONG),
        EventTrigger,
        doc="(scope key, trigger key) -> an event that fired, not taken yet",
    )
    TIMER = cf(
        "timer",
        CompositeKey(_INSTANCE, _LONG),
        Timer,
        doc="(element instance key, timer key) -> a timer",
    )
    TIMER_DUE_DATE = cf(
        "timer_due_date",
        CompositeKey(_LONG, _INSTANCE, _LONG),
        _NIL_VALUE,
        queue=True,
        doc="(due date, element instance key, timer key): timers by when they fire",
    )
    VARIABLE = cf(
        "variable",
        CompositeKey(_LONG, _STR),
        str,
        doc="(scope key, name) -> the variable's value as JSON text",
    )
    USER_TASK = cf("user_task", _LONG, UserTask, doc="user task key -> an open user task")
    USER_TASK_TRANSITION = cf(
        "user_task_transition",
        _LONG,
        TaskTransition,
        doc="user task key -> its transition under way (the values it ends with, listeners done)",
    )
    FORM_BY_KEY = cf("form_by_key", _LONG, DeployedForm, doc="form key -> the deployed form")
    FORM_BY_ID_AND_VERSION = cf(
        "form_by_id_and_version",
        CompositeKey(_STR, IntKey()),
        int,
        doc="(form id, version) -> form key",
    )
    DRG_BY_KEY = cf("drg_by_key", _LONG, DeployedDrg, doc="graph key -> the deployed DMN")
    DRG_BY_ID_AND_VERSION = cf(
        "drg_by_id_and_version",
        CompositeKey(_STR, IntKey()),
        int,
        doc="(decision requirements id, version) -> graph key",
    )
    LATEST_DRG_VERSION = cf(
        "latest_drg_version", _STR, int, doc="decision requirements id -> its latest version"
    )
    DECISION_BY_KEY = cf(
        "decision_by_key", _LONG, DeployedDecision, doc="decision key -> the deployed decision"
    )
    DECISION_BY_ID_AND_VERSION = cf(
        "decision_by_id_and_version",
        CompositeKey(_STR, IntKey()),
        int,
        doc="(decision id, version) -> decision key",
    )
    LATEST_DECISION_VERSION = cf(
        "latest_decision_version", _STR, int, doc="decision id -> its latest version"
    )
    LATEST_FORM_VERSION = cf("latest_form_version", _STR, int, doc="form id -> its latest version")
    INCIDENT = cf("incident", _LONG, Incident, doc="incident key -> an open incident")
    INCIDENT_BY_ELEMENT = cf(
        "incident_by_element", _INSTANCE, int, doc="element instance key -> its open incident"
    )
    BANNED_INSTANCE = cf(
        "banned_instance", _LONG, _NIL_VALUE, doc="process instance key: banned after an error"
    )
    DOWNSTREAM_POSITION = cf(
        "downstream_position",
        _STR,
        int,
        doc="consumer group -> the log offset it has read up to (holds truncation back)",
    )

    @classmethod
    def all(cls) -> tuple[ColumnFamilyDef[Any, Any], ...]:
        """Every declaration, in declaration order."""
        return tuple(v for v in vars(cls).values() if isinstance(v, ColumnFamilyDef))
