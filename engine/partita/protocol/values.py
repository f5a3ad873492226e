"""The value of every record kind, one frozen `msgspec.Struct` per Avro record in
`avro/record.avsc` (a few dozen nanoseconds to build or copy: `msgspec.structs.replace`).

Field names are the Avro names in snake_case; defaults are the Avro defaults, so a value can be
built with only the fields that matter. Keys are -1 when absent. `variables` fields hold a JSON
object document as text, as in Zeebe's gateway API. A test keeps these classes and the schema
identical.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct, field

from partita.protocol.decision_values import (  # the codecs find every record struct here
    DecisionEvaluationValue,
    DecisionMetadata,
    DecisionRequirementsMetadata,
    DecisionRequirementsValue,
    DecisionValue,
    EvaluatedDecision,  # noqa: F401
    EvaluatedInput,  # noqa: F401
    EvaluatedOutput,  # noqa: F401
    MatchedRule,  # noqa: F401
)
from partita.protocol.enums import (
    BpmnElementType,
    BpmnEventType,
    ErrorType,
    JobKind,
    JobListenerEventType,
    ValueType,
    VariableDocumentUpdateSemantic,
)


class DeploymentResource(Struct, frozen=True, gc=False):
    """One deployed file."""

    resource_name: str = ""
    resource: bytes = b""


class ProcessMetadata(Struct, frozen=True, gc=False):
    """A process definition created or found by a deployment."""

    bpmn_process_id: str = ""
    version: int = -1
    process_definition_key: int = -1
    resource_name: str = ""
    checksum: bytes = b""
    is_duplicate: bool = False
    tenant_id: str = "<default>"


class FormMetadata(Struct, frozen=True, gc=False):
    """A form created or found by a deployment."""

    form_id: str = ""
    version: int = -1
    form_key: int = -1
    resource_name: str = ""
    checksum: bytes = b""
    is_duplicate: bool = False
    version_tag: str = ""
    deployment_key: int = -1
    tenant_id: str = "<default>"


class DeploymentValue(Struct, frozen=True, gc=False):
    """A deployment of BPMN, DMN and form resources and the definitions it yields."""

    resources: tuple[DeploymentResource, ...] = ()
    processes_metadata: tuple[ProcessMetadata, ...] = ()
    tenant_id: str = "<default>"
    form_metadata: tuple[FormMetadata, ...] = ()
    decisions_metadata: tuple[DecisionMetadata, ...] = ()
    decision_requirements_metadata: tuple[DecisionRequirementsMetadata, ...] = ()


class FormValue(Struct, frozen=True, gc=False):
    """A deployed form (Camunda Forms JSON) that user tasks link by its form id."""

    form_id: str = ""
    version: int = -1
    form_key: int = -1
    resource_name: str = ""
    checksum: bytes = b""
    resource: bytes = b""
    version_tag: str = ""
    deployment_key: int = -1
    is_duplicate: bool = False
    tenant_id: str = "<default>"


class ProcessValue(Struct, frozen=True, gc=False):
    """A deployed process definition."""

    bpmn_process_id: str = ""
    version: int = -1
    process_definition_key: int = -1
    resource_name: str = ""
    checksum: bytes = b""
    resource: bytes = b""
    tenant_id: str = "<default>"
    deployment_key: int = -1


class ProcessInstanceValue(Struct, frozen=True, gc=False):
    """An element instance of a process instance, or a sequence flow taken."""

    bpmn_process_id: str = ""
    version: int = -1
    process_definition_key: int = -1
    process_instance_key: int = -1
    element_id: str = ""
    flow_scope_key: int = -1
    bpmn_element_type: BpmnElementType = BpmnElementType.UNSPECIFIED
    bpmn_event_type: BpmnEventType = BpmnEventType.UNSPECIFIED
    parent_process_instance_key: int = -1
    parent_element_instance_key: int = -1
    tenant_id: str = "<default>"


class ProcessInstanceCreationValue(Struct, frozen=True, gc=False):
    """A request to start a process instance, and the created instance."""

    bpmn_process_id: str = ""
    version: int = -1
    process_definition_key: int = -1
    variables: str = "{}"
    process_instance_key: int = -1
    fetch_variables: tuple[str, ...] = ()
    tenant_id: str = "<default>"


class ProcessInstanceResultValue(Struct, frozen=True, gc=False):
    """The result of a completed instance, replied to CREATE_WITH_AWAITING_RESULT."""

    bpmn_process_id: str = ""
    version: int = -1
    process_definition_key: int = -1
    process_instance_key: int = -1
    variables: str = "{}"
    tenant_id: str = "<default>"


class ProcessEventValue(Struct, frozen=True, gc=False):
    """An event (message, timer, error) triggering an element of a process instance."""

    scope_key: int = -1
    target_element_id: str = ""
    variables: str = "{}"
    process_definition_key: int = -1
    process_instance_key: int = -1
    tenant_id: str = "<default>"


class JobValue(Struct, frozen=True, gc=False):
    """A unit of work for a job worker, created by a service task."""

    type: str = ""
    worker: str = ""
    retries: int = 3
    retry_backoff: int = 0
    recurring_time: int = -1
    deadline: int = -1
    timeout: int = -1
    error_message: str = ""
    error_code: str = ""
    variables: str = "{}"
    custom_headers: Mapping[str, str] = field(default_factory=dict)
    process_instance_key: int = -1
    bpmn_process_id: str = ""
    process_definition_version: int = -1
    process_definition_key: int = -1
    element_id: str = ""
    element_instance_key: int = -1
    tenant_id: str = "<default>"
    job_kind: JobKind = JobKind.BPMN_ELEMENT
    listener_event_type: JobListenerEventType = JobListenerEventType.UNSPECIFIED
    result: str = ""


class EscalationValue(Struct, frozen=True, gc=False):
    """An escalation thrown by an intermediate throw or end event, caught or not."""

    process_instance_key: int = -1
    escalation_code: str = ""
    throw_element_id: str = ""
    catch_element_id: str = ""


class SignalValue(Struct, frozen=True, gc=False):
    """A signal broadcast to every partition."""

    signal_name: str = ""
    variables: str = "{}"
    tenant_id: str = "<default>"


class SignalSubscriptionValue(Struct, frozen=True, gc=False):
    """Something waiting for a signal (catchEventInstanceKey -1: a signal start event)."""

    process_definition_key: int = -1
    bpmn_process_id: str = ""
    catch_event_id: str = ""
    catch_event_instance_key: int = -1
    signal_name: str = ""
    tenant_id: str = "<default>"


class CompensationSubscriptionValue(Struct, frozen=True, gc=False):
    """A completed activity a compensation throw or end event of its scope can compensate."""

    tenant_id: str = "<default>"
    process_instance_key: int = -1
    process_definition_key: int = -1
    compensable_activity_id: str = ""
    throw_event_id: str = ""
    throw_event_instance_key: int = -1
    compensation_handler_id: str = ""
    compensation_handler_instance_key: int = -1
    compensable_activity_scope_key: int = -1
    compensable_activity_instance_key: int = -1
    variables: str = "{}"


class UserTaskValue(Struct, frozen=True, gc=False):
    """A Zeebe user task (`zeebe:userTask`): a person's work, with assignment and schedule."""

    user_task_key: int = -1
    assignee: str = ""
    candidate_groups_list: tuple[str, ...] = ()
    candidate_users_list: tuple[str, ...] = ()
    due_date: str = ""
    follow_up_date: str = ""
    form_key: int = -1
    external_form_reference: str = ""
    variables: str = "{}"
    custom_headers: Mapping[str, str] = field(default_factory=dict)
    priority: int = 50
    changed_attributes: tuple[str, ...] = ()
    action: str = ""
    creation_timestamp: int = -1
    denied_reason: str = ""
    bpmn_process_id: str = ""
    process_definition_version: int = -1
    process_definition_key: int = -1
    process_instance_key: int = -1
    element_id: str = ""
    element_instance_key: int = -1
    tenant_id: str = "<default>"


PUSH_WORKER = "partita.push"
"""The worker name of a JOB_BATCH ACTIVATED that pushed its job to the type's job topic
(reserved: a poll may not use it)."""


class JobBatchValue(Struct, frozen=True, gc=False):
    """A request to activate jobs of one type, and the jobs it activated."""

    type: str = ""
    worker: str = ""
    timeout: int = 300000
    max_jobs_to_activate: int = 32
    job_keys: tuple[int, ...] = ()
    jobs: tuple[JobValue, ...] = ()
    truncated: bool = False


class MessageValue(Struct, frozen=True, gc=False):
    """A published message, buffered until correlated or expired."""

    name: str = ""
    correlation_key: str = ""
    time_to_live: int = -1
    deadline: int = -1
    variables: str = "{}"
    message_id: str = ""
    tenant_id: str = "<default>"


class MessageSubscriptionValue(Struct, frozen=True, gc=False):
    """A subscription on the message's partition for a catch event waiting in a process instance."""

    process_instance_key: int = -1
    element_instance_key: int = -1
    bpmn_process_id: str = ""
    message_key: int = -1
    message_name: str = ""
    correlation_key: str = ""
    interrupting: bool = True
    variables: str = "{}"
    tenant_id: str = "<default>"


class ProcessMessageSubscriptionValue(Struct, frozen=True, gc=False):
    """The process instance side of a message subscription."""

    subscription_partition_id: int = -1
    process_instance_key: int = -1
    element_instance_key: int = -1
    bpmn_process_id: str = ""
    message_key: int = -1
    message_name: str = ""
    correlation_key: str = ""
    element_id: str = ""
    interrupting: bool = True
    variables: str = "{}"
    tenant_id: str = "<default>"


class MessageStartEventSubscriptionValue(Struct, frozen=True, gc=False):
    """A message start event of the latest version of a process, listening on a partition."""

    process_definition_key: int = -1
    bpmn_process_id: str = ""
    start_event_id: str = ""
    message_name: str = ""
    message_key: int = -1
    correlation_key: str = ""
    process_instance_key: int = -1
    variables: str = "{}"
    tenant_id: str = "<default>"


class TimerValue(Struct, frozen=True, gc=False):
    """A timer of a timer catch event, boundary event or timer start event."""

    element_instance_key: int = -1
    process_instance_key: int = -1
    process_definition_key: int = -1
    due_date: int = -1
    target_element_id: str = ""
    repetitions: int = 1
    tenant_id: str = "<default>"


class VariableValue(Struct, frozen=True, gc=False):
    """One variable of a scope."""

    name: str = ""
    value: str = "null"
    scope_key: int = -1
    process_instance_key: int = -1
    process_definition_key: int = -1
    bpmn_process_id: str = ""
    tenant_id: str = "<default>"


class VariableDocumentValue(Struct, frozen=True, gc=False):
    """A request to set variables on a scope."""

    scope_key: int = -1
    update_semantics: VariableDocumentUpdateSemantic = VariableDocumentUpdateSemantic.PROPAGATE
    variables: str = "{}"
    tenant_id: str = "<default>"


class IncidentValue(Struct, frozen=True, gc=False):
    """A problem that stops an element until it is resolved."""

    error_type: ErrorType = ErrorType.UNKNOWN
    error_message: str = ""
    bpmn_process_id: str = ""
    process_definition_key: int = -1
    process_instance_key: int = -1
    element_id: str = ""
    element_instance_key: int = -1
    job_key: int = -1
    variable_scope_key: int = -1
    tenant_id: str = "<default>"


class ErrorValue(Struct, frozen=True, gc=False):
    """An unexpected processing failure; the process instance is banned."""

    exception_message: str = ""
    stacktrace: str = ""
    error_event_position: int = -1
    process_instance_key: int = -1


RecordValue = (
    DeploymentValue
    | ProcessValue
    | ProcessInstanceValue
    | ProcessInstanceCreationValue
    | ProcessInstanceResultValue
    | ProcessEventValue
    | JobValue
    | JobBatchValue
    | MessageValue
    | MessageSubscriptionValue
    | ProcessMessageSubscriptionValue
    | MessageStartEventSubscriptionValue
    | TimerValue
    | VariableValue
    | VariableDocumentValue
    | IncidentValue
    | ErrorValue
    | UserTaskValue
    | FormValue
    | DecisionValue
    | DecisionRequirementsValue
    | DecisionEvaluationValue
    | EscalationValue
    | SignalValue
    | SignalSubscriptionValue
    | CompensationSubscriptionValue
)

VALUE_CLASSES: dict[ValueType, type[RecordValue]] = {
    ValueType.DEPLOYMENT: DeploymentValue,
    ValueType.PROCESS: ProcessValue,
    ValueType.PROCESS_INSTANCE: ProcessInstanceValue,
    ValueType.PROCESS_INSTANCE_CREATION: ProcessInstanceCreationValue,
    ValueType.PROCESS_INSTANCE_RESULT: ProcessInstanceResultValue,
    ValueType.PROCESS_EVENT: ProcessEventValue,
    ValueType.JOB: JobValue,
    ValueType.JOB_BATCH: JobBatchValue,
    ValueType.MESSAGE: MessageValue,
    ValueType.MESSAGE_SUBSCRIPTION: MessageSubscriptionValue,
    ValueType.PROCESS_MESSAGE_SUBSCRIPTION: ProcessMessageSubscriptionValue,
    ValueType.MESSAGE_START_EVENT_SUBSCRIPTION: MessageStartEventSubscriptionValue,
    ValueType.TIMER: TimerValue,
    ValueType.VARIABLE: VariableValue,
    ValueType.VARIABLE_DOCUMENT: VariableDocumentValue,
    ValueType.INCIDENT: IncidentValue,
    ValueType.ERROR: ErrorValue,
    ValueType.USER_TASK: UserTaskValue,
    ValueType.FORM: FormValue,
    ValueType.DECISION: DecisionValue,
    ValueType.DECISION_REQUIREMENTS: DecisionRequirementsValue,
    ValueType.DECISION_EVALUATION: DecisionEvaluationValue,
    ValueType.ESCALATION: EscalationValue,
    ValueType.SIGNAL: SignalValue,
    ValueType.SIGNAL_SUBSCRIPTION: SignalSubscriptionValue,
    ValueType.COMPENSATION_SUBSCRIPTION: CompensationSubscriptionValue,
}
"""The value class of each value type; the inverse is `VALUE_TYPES`."""

VALUE_TYPES: dict[type[RecordValue], ValueType] = {cls: vt for vt, cls in VALUE_CLASSES.items()}
