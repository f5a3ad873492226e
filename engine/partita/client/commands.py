"""The commands a client sends, built once for the synchronous and the asyncio client.

Each function returns a `Request`: the intent, the value and the key of one COMMAND record, and
the partition when the command must go to a particular one (otherwise the client routes it as
docs/producing.md says). Nothing here touches Kafka.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from partita.protocol.decision_values import DecisionEvaluationValue
from partita.protocol.enums import VariableDocumentUpdateSemantic
from partita.protocol.intents import (
    DecisionEvaluationIntent,
    DeploymentIntent,
    IncidentIntent,
    Intent,
    JobBatchIntent,
    JobIntent,
    MessageIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    SignalIntent,
    UserTaskIntent,
    VariableDocumentIntent,
)
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    IncidentValue,
    JobBatchValue,
    JobValue,
    MessageValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    RecordValue,
    SignalValue,
    UserTaskValue,
    VariableDocumentValue,
)


@dataclass(frozen=True, slots=True)
class Request:
    intent: Intent
    value: RecordValue
    key: int = -1
    partition: int | None = None


def _document(variables: dict[str, Any] | None) -> str:
    return json.dumps(variables or {})


def deploy(resources: Sequence[Path | tuple[str, bytes]]) -> Request:
    """BPMN files by path, or (name, content) pairs."""
    parts = tuple(
        DeploymentResource(r.name, r.read_bytes())
        if isinstance(r, Path)
        else DeploymentResource(*r)
        for r in resources
    )
    return Request(DeploymentIntent.CREATE, DeploymentValue(resources=parts))


def create_instance(
    bpmn_process_id: str,
    variables: dict[str, Any] | None = None,
    *,
    version: int = -1,
    await_result: bool = False,
    fetch_variables: Sequence[str] = (),
    definition_key: int = -1,
) -> Request:
    """By BPMN process id and version (-1: the latest), or by `definition_key` when given."""
    intent = (
        ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT
        if await_result
        else ProcessInstanceCreationIntent.CREATE
    )
    value = ProcessInstanceCreationValue(
        bpmn_process_id=bpmn_process_id,
        version=version,
        process_definition_key=definition_key,
        variables=_document(variables),
        fetch_variables=tuple(fetch_variables),
    )
    return Request(intent, value)


def cancel_instance(key: int) -> Request:
    value = ProcessInstanceValue(process_instance_key=key)
    return Request(ProcessInstanceIntent.CANCEL, value, key)


def activate_jobs(
    job_type: str, partition: int, worker: str, max_jobs: int, timeout_ms: int
) -> Request:
    batch = JobBatchValue(
        type=job_type, worker=worker, timeout=timeout_ms, max_jobs_to_activate=max_jobs
    )
    return Request(JobBatchIntent.ACTIVATE, batch, partition=partition)


def complete_job(
    key: int, variables: dict[str, Any] | None = None, result: dict[str, Any] | None = None
) -> Request:
    """`result`: a task listener's job result (`JobValue.result`: denied, deniedReason,
    correctedAttributes, corrections)."""
    value = JobValue(variables=_document(variables), result=_document(result) if result else "")
    return Request(JobIntent.COMPLETE, value, key)


def fail_job(
    key: int,
    retries: int,
    message: str = "",
    backoff_ms: int = 0,
    variables: dict[str, Any] | None = None,
) -> Request:
    """Variables (optional) become local to the job's task."""
    value = JobValue(
        retries=retries,
        error_message=message,
        retry_backoff=backoff_ms,
        variables=_document(variables),
    )
    return Request(JobIntent.FAIL, value, key)


def throw_error(
    key: int, code: str, message: str = "", variables: dict[str, Any] | None = None
) -> Request:
    value = JobValue(error_code=code, error_message=message, variables=_document(variables))
    return Request(JobIntent.THROW_ERROR, value, key)


def update_job_retries(key: int, retries: int) -> Request:
    return Request(JobIntent.UPDATE_RETRIES, JobValue(retries=retries), key)


def update_job_timeout(key: int, timeout_ms: int, worker: str = "") -> Request:
    """With `worker`, the job is recorded as that worker's from now on."""
    return Request(JobIntent.UPDATE_TIMEOUT, JobValue(timeout=timeout_ms, worker=worker), key)


def yield_job(key: int) -> Request:
    """Give an activated job back: activatable again at once."""
    return Request(JobIntent.YIELD, JobValue(), key)


def publish_message(
    name: str,
    correlation_key: str,
    variables: dict[str, Any] | None = None,
    *,
    ttl_ms: int = -1,
    message_id: str = "",
) -> Request:
    value = MessageValue(
        name=name,
        correlation_key=correlation_key,
        time_to_live=ttl_ms,
        message_id=message_id,
        variables=_document(variables),
    )
    return Request(MessageIntent.PUBLISH, value)


def set_variables(scope_key: int, variables: dict[str, Any], *, local: bool = False) -> Request:
    semantic = (
        VariableDocumentUpdateSemantic.LOCAL if local else VariableDocumentUpdateSemantic.PROPAGATE
    )
    value = VariableDocumentValue(
        scope_key=scope_key, update_semantics=semantic, variables=json.dumps(variables)
    )
    return Request(VariableDocumentIntent.UPDATE, value)


def resolve_incident(key: int) -> Request:
    return Request(IncidentIntent.RESOLVE, IncidentValue(), key)


def assign_user_task(key: int, assignee: str, *, action: str = "") -> Request:
    """Assign a user task (replacing any assignee); an empty assignee unassigns it."""
    return Request(UserTaskIntent.ASSIGN, UserTaskValue(assignee=assignee, action=action), key)


def claim_user_task(key: int, assignee: str, *, action: str = "") -> Request:
    """Assign a user task unless someone else has it (rejected INVALID_STATE then)."""
    return Request(UserTaskIntent.CLAIM, UserTaskValue(assignee=assignee, action=action), key)


def update_user_task(
    key: int,
    *,
    candidate_groups: Sequence[str] | None = None,
    candidate_users: Sequence[str] | None = None,
    due_date: str | None = None,
    follow_up_date: str | None = None,
    priority: int | None = None,
    action: str = "",
) -> Request:
    """Change the attributes given (None keeps one; an empty value clears it)."""
    given = {
        "candidateGroupsList": candidate_groups,
        "candidateUsersList": candidate_users,
        "dueDate": due_date,
        "followUpDate": follow_up_date,
        "priority": priority,
    }
    value = UserTaskValue(
        candidate_groups_list=tuple(candidate_groups or ()),
        candidate_users_list=tuple(candidate_users or ()),
        due_date=due_date or "",
        follow_up_date=follow_up_date or "",
        priority=50 if priority is None else priority,
        changed_attributes=tuple(name for name, v in given.items() if v is not None),
        action=action,
    )
    return Request(UserTaskIntent.UPDATE, value, key)


def complete_user_task(
    key: int, variables: dict[str, Any] | None = None, *, action: str = ""
) -> Request:
    value = UserTaskValue(variables=_document(variables), action=action)
    return Request(UserTaskIntent.COMPLETE, value, key)


def evaluate_decision(
    decision_id: str = "", variables: dict[str, Any] | None = None, *, decision_key: int = -1
) -> Request:
    """Evaluate a deployed decision: by id (its latest version) or by key. The answer is
    DECISION_EVALUATION EVALUATED, or FAILED with the reason (not a rejection)."""
    value = DecisionEvaluationValue(
        decision_id=decision_id, decision_key=decision_key, variables=_document(variables)
    )
    return Request(DecisionEvaluationIntent.EVALUATE, value)


def broadcast_signal(name: str, variables: dict[str, Any] | None = None) -> Request:
    """Broadcast a signal to every partition: SIGNAL BROADCASTED answers."""
    return Request(
        SignalIntent.BROADCAST, SignalValue(signal_name=name, variables=_document(variables))
    )
