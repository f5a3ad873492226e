"""Column family declarations: a name, a key codec and a value codec each.

`ColumnFamilies` is the one place the engine's column families are declared; adding one is one
line there. The numeric order of declaration is also the order of the state digest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from engine.state.keys import (
    CompositeKey,
    ForeignKey,
    IntKey,
    KeyCodec,
    LongKey,
    StrKey,
)
from engine.state.stored import (
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
    Timer,
)
from engine.state.values import ValueCodec

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


VALUE_VERSION = 2
"""The version byte of every column family's values in this layout (1 was JSON)."""


def cf(
    name: str,
    key: KeyCodec[K],
    value_type: type[V],
    version: int = VALUE_VERSION,
    *,
    queue: bool = False,
) -> ColumnFamilyDef[K, V]:
    return ColumnFamilyDef(name, key, ValueCodec(value_type, version), queue)


_LONG = LongKey()
_STR = StrKey()
_INSTANCE = ForeignKey(LongKey(), "element_instance")
_NIL_VALUE: type[None] = type(None)


class ColumnFamilies:
    """Every column family of a partition, each with one value type (`engine.state.stored`
    for the structured ones)."""

    META = cf("meta", _STR, int)  # positions, key generator, schema version
    PROCESS_BY_KEY = cf("process_by_key", _LONG, DeployedProcessRecord)
    PROCESS_RESOURCE = cf("process_resource", _LONG, str)  # the BPMN XML of a definition
    PROCESS_BY_ID_AND_VERSION = cf(  # -> the process definition key
        "process_by_id_and_version", CompositeKey(_STR, IntKey()), int
    )
    LATEST_PROCESS_VERSION = cf("latest_process_version", _STR, int)
    ELEMENT_INSTANCE = cf("element_instance", _LONG, ElementInstance)
    TAKEN_FLOWS = cf(  # arrivals at a parallel join: (flow scope, gateway id, flow id) -> count
        "taken_flows", CompositeKey(_LONG, _STR, _STR), int
    )
    ELEMENT_INSTANCE_CHILDREN = cf(
        "element_instance_children", CompositeKey(_INSTANCE, _LONG), _NIL_VALUE
    )
    JOB = cf("job", _LONG, Job)
    JOB_STATE = cf("job_state", _LONG, str)
    JOB_ACTIVATABLE = cf("job_activatable", CompositeKey(_STR, _LONG), _NIL_VALUE, queue=True)
    JOB_DEADLINE = cf("job_deadline", CompositeKey(_LONG, _LONG), _NIL_VALUE, queue=True)
    JOB_BACKOFF = cf("job_backoff", CompositeKey(_LONG, _LONG), _NIL_VALUE, queue=True)
    JOB_PUSHED = cf("job_pushed", _STR, int)  # job type -> pushed jobs not yet finished
    JOB_ACTIVATABLE_COUNT = cf("job_activatable_count", _STR, int)  # job type -> activatable
    MESSAGE = cf("message", _LONG, Message)
    MESSAGE_CORRELATION = cf("message_correlation", CompositeKey(_STR, _STR, _LONG), _NIL_VALUE)
    MESSAGE_DEADLINE = cf("message_deadline", CompositeKey(_LONG, _LONG), _NIL_VALUE, queue=True)
    MESSAGE_ID = cf("message_id", CompositeKey(_STR, _STR, _STR), int)
    MESSAGE_SUBSCRIPTION = cf(
        "message_subscription", CompositeKey(_STR, _STR, _LONG), MessageSubscription
    )
    PROCESS_MESSAGE_SUBSCRIPTION = cf(
        "process_message_subscription", CompositeKey(_INSTANCE, _STR), ProcessMessageSubscription
    )
    MESSAGE_START_EVENT_SUBSCRIPTION = cf(
        "message_start_event_subscription", CompositeKey(_STR, _LONG), MessageStartSubscription
    )
    MESSAGE_CORRELATED = cf(  # (message key, bpmnProcessId): a message correlates once per process
        "message_correlated", CompositeKey(_LONG, _STR), _NIL_VALUE
    )
    MESSAGE_START_INSTANCE = cf(  # (bpmnProcessId, correlation key) -> instance it started
        "message_start_instance", CompositeKey(_STR, _STR), int
    )
    MESSAGE_START_BY_INSTANCE = cf("message_start_by_instance", _LONG, MessageStartedInstance)
    EVENT_TRIGGER = cf(  # (scope key, trigger key) -> target element and variables
        "event_trigger", CompositeKey(_LONG, _LONG), EventTrigger
    )
    TIMER = cf("timer", CompositeKey(_INSTANCE, _LONG), Timer)
    TIMER_DUE_DATE = cf(
        "timer_due_date", CompositeKey(_LONG, _INSTANCE, _LONG), _NIL_VALUE, queue=True
    )
    VARIABLE = cf("variable", CompositeKey(_LONG, _STR), str)
    INCIDENT = cf("incident", _LONG, Incident)
    INCIDENT_BY_ELEMENT = cf("incident_by_element", _INSTANCE, int)
    BANNED_INSTANCE = cf("banned_instance", _LONG, _NIL_VALUE)
    DOWNSTREAM_POSITION = cf("downstream_position", _STR, int)

    @classmethod
    def all(cls) -> tuple[ColumnFamilyDef[Any, Any], ...]:
        """Every declaration, in declaration order."""
        return tuple(v for v in vars(cls).values() if isinstance(v, ColumnFamilyDef))
