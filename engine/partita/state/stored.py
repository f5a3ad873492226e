"""The stored types: one per column family whose value is more than a number or a string.

Each is a frozen `msgspec.Struct` stored as a MessagePack array of its fields in declaration
order (`array_like`), so a value costs a few hundred nanoseconds to encode or decode and its
field names are not repeated in every entry. Fields are snake_case, as everywhere in Python;
the camelCase of the records' Avro schemas never reaches state.

How a stored type evolves: append fields with defaults (an entry written before decodes with
the default, one written after by a newer build keeps decoding here, its extra fields
ignored). Removing, reordering or retyping a field is a new version of the column family
(`cf(..., version=N)` in `partita.state.columns`) with an upgrade in `partita.state.migrate`.
Changes are copies: `msgspec.structs.replace(job, retries=2)`.
"""

from __future__ import annotations

from msgspec import Struct

from partita.elements import BpmnElementType, BpmnEventType
from partita.protocol.enums import ErrorType, JobKind, JobListenerEventType


class _Stored(Struct, frozen=True, array_like=True):
    """A stored value: immutable, so a decoded value can be shared without a defensive copy."""


class DeployedProcessRecord(_Stored, frozen=True):
    """A deployed process definition (its BPMN is in `process_resource`)."""

    bpmn_process_id: str
    version: int
    resource_name: str
    checksum: str
    """MD5 of the resource, hex."""
    deployment_key: int = -1


class ElementInstance(_Stored, frozen=True):
    """An active element instance of a process instance."""

    element_id: str
    element_type: BpmnElementType
    flow_scope_key: int
    process_instance_key: int
    process_definition_key: int
    bpmn_process_id: str
    version: int
    state: str
    """The name of the last lifecycle intent applied (ELEMENT_ACTIVATING ...)."""
    active_flows: int = 0
    """Sequence flows taken inside this scope whose target has not activated yet."""
    job_key: int = -1
    event_type: BpmnEventType = BpmnEventType.UNSPECIFIED
    parent_process_instance_key: int = -1
    parent_element_instance_key: int = -1
    called_child_key: int = -1
    """A call activity's child process instance, to terminate it with the call."""
    user_task_key: int = -1
    """A user task element's USER_TASK, to cancel it with the element."""
    listener_index: int = 0
    """How many execution listeners of the running phase (start, then end) have completed."""
    ad_hoc_completing: bool = False
    """A job worker ad-hoc subprocess whose job said its completion condition is fulfilled:
    it completes once its paths have, and creates no job more."""


class EventTrigger(_Stored, frozen=True):
    """An event that fired for an element which has not taken it yet."""

    target: str
    """The element id the event leads to."""
    variables: str = "{}"
    """The event's variables, a JSON object."""


class Job(_Stored, frozen=True):
    """A job of a service-like task (its state is in `job_state`)."""

    type: str
    retries: int
    custom_headers: dict[str, str]
    process_instance_key: int
    bpmn_process_id: str
    process_definition_version: int
    process_definition_key: int
    element_id: str
    element_instance_key: int
    worker: str = ""
    deadline: int = -1
    """When an activation runs out (ms since the epoch); -1 when not activated."""
    recurring_time: int = -1
    """When a failed job's retry back-off ends; -1 when not backing off."""
    pushed: bool = False
    """Activated by a push to the job topic (counted against the push bound)."""
    job_kind: JobKind = JobKind.BPMN_ELEMENT
    listener_event_type: JobListenerEventType = JobListenerEventType.UNSPECIFIED


class DeployedForm(_Stored, frozen=True):
    """A deployed form (`.form`): its id, version and JSON."""

    form_id: str
    version: int
    resource_name: str
    checksum: str
    """MD5 of the resource, hex."""
    resource: str
    deployment_key: int = -1
    version_tag: str = ""


class DeployedDrg(_Stored, frozen=True):
    """A deployed decision requirements graph (a `.dmn` resource) and its XML."""

    drg_id: str
    name: str
    version: int
    namespace: str
    resource_name: str
    checksum: str
    """MD5 of the resource, hex."""
    resource: str


class DeployedDecision(_Stored, frozen=True):
    """A deployed decision: its id, version and graph."""

    decision_id: str
    name: str
    version: int
    drg_id: str
    drg_key: int
    deployment_key: int = -1
    version_tag: str = ""


class UserTask(_Stored, frozen=True):
    """A Zeebe user task: what its USER_TASK events carry, and its lifecycle state."""

    state: str
    """CREATING, CREATED, ASSIGNING, CLAIMING, UPDATING, COMPLETING or CANCELING."""
    element_instance_key: int
    process_instance_key: int
    process_definition_key: int
    bpmn_process_id: str
    process_definition_version: int
    element_id: str
    assignee: str = ""
    candidate_groups: tuple[str, ...] = ()
    candidate_users: tuple[str, ...] = ()
    due_date: str = ""
    follow_up_date: str = ""
    priority: int = 50
    external_form_reference: str = ""
    custom_headers: dict[str, str] = {}
    creation_timestamp: int = -1
    form_key: int = -1


class TaskTransition(_Stored, frozen=True):
    """A user task's transition under way (CREATING ... CANCELING until its final event): the
    values it will end with, task listeners' corrections included, and how many of its task
    listeners have completed."""

    event: str
    """The transitional event: CREATING, ASSIGNING, CLAIMING, UPDATING, COMPLETING, CANCELING."""
    task: UserTask
    variables: str = "{}"
    action: str = ""
    changed_attributes: tuple[str, ...] = ()
    listener_index: int = 0
    initial_assignee: str = ""
    """At creation: the model's assignee, given by an assignment once the task is created."""


class Incident(_Stored, frozen=True):
    """An open incident."""

    error_type: ErrorType
    error_message: str
    element_instance_key: int
    job_key: int
    process_instance_key: int


class Message(_Stored, frozen=True):
    """A published message buffered until its time to live runs out."""

    name: str
    correlation_key: str
    ttl: int
    deadline: int
    variables: str
    message_id: str


class MessageSubscription(_Stored, frozen=True):
    """An element waiting for a message, on the message's partition."""

    process_instance_key: int
    bpmn_process_id: str
    interrupting: bool
    correlating: int = -1
    """The message being correlated to it and not yet confirmed; -1 when none."""


class ProcessMessageSubscription(_Stored, frozen=True):
    """What an element instance opened on the message's partition, on its own partition."""

    subscription_partition_id: int
    process_instance_key: int
    element_instance_key: int
    bpmn_process_id: str
    message_name: str
    correlation_key: str
    element_id: str
    interrupting: bool


class MessageStartSubscription(_Stored, frozen=True):
    """A message start event of a deployed process."""

    bpmn_process_id: str
    start_event_id: str


class MessageStartedInstance(_Stored, frozen=True):
    """The correlation key a message start gave an instance, freed for the next message
    when the instance ends."""

    bpmn_process_id: str
    correlation_key: str


class SignalSubscription(_Stored, frozen=True):
    """Something waiting for a signal: an element instance's catch, boundary or event
    subprocess start event, or a process's signal start event (instance key -1)."""

    process_definition_key: int
    bpmn_process_id: str
    catch_event_id: str
    catch_event_instance_key: int


class CompensationSubscription(_Stored, frozen=True):
    """A completed activity its scope's compensation throw events can compensate (the fields
    of COMPENSATION_SUBSCRIPTION; triggered once `throw_event_id` is set)."""

    process_definition_key: int
    compensable_activity_id: str
    compensable_activity_scope_key: int
    compensable_activity_instance_key: int
    compensation_handler_id: str = ""
    throw_event_id: str = ""
    throw_event_instance_key: int = -1
    compensation_handler_instance_key: int = -1


class Timer(_Stored, frozen=True):
    """A timer waiting for its due date."""

    element_instance_key: int
    process_instance_key: int
    process_definition_key: int
    due_date: int
    target_element_id: str
    repetitions: int
