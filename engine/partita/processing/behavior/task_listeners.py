"""Task listeners' jobs (`zeebe:taskListeners`): which listeners a user task's transition runs,
and the job of the next one, with the task's attributes in its headers as Zeebe hands them to
a listener. The transitions themselves are the user task domain's (`user_task.transitions`);
a terminating element starts its task's canceling listeners from here (`termination`)."""

from __future__ import annotations

from typing import Any

from partita.bpmn import TaskListener, UserTask
from partita.processing.behavior.jobs import new_job
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.processing.instance import state as instance_state
from partita.processing.user_task.state import task
from partita.protocol import json_text
from partita.protocol.enums import JobKind, JobListenerEventType
from partita.state.stored import TaskTransition
from partita.state.stored import UserTask as StoredTask

LISTENED = {
    "CREATING": "creating",
    "ASSIGNING": "assigning",
    "CLAIMING": "assigning",
    "UPDATING": "updating",
    "COMPLETING": "completing",
    "CANCELING": "canceling",
}
"""Transitional state -> the task listeners' event type (a claim is an assignment)."""
_HEADERS = "io.camunda.zeebe:"


def model_of(ctx: ProcessingContext, task_key: int) -> UserTask | None:
    """The user task element of an open task, as deployed."""
    stored = task(ctx.state, task_key)
    deployed = deployment_state.by_key(ctx.state, stored.process_definition_key) if stored else None
    if stored is None or deployed is None:
        return None
    element = deployed.model(ctx.state).elements.get(stored.element_id)
    return element if isinstance(element, UserTask) else None


def listeners_of(ctx: ProcessingContext, task_key: int, state: str) -> tuple[TaskListener, ...]:
    """The listeners the transition into `state` (CREATING, ..., CANCELING) runs, in order."""
    model = model_of(ctx, task_key)
    return model.listeners_of(LISTENED[state]) if model is not None else ()


def next_job(
    ctx: ProcessingContext, key: int, under_way: TaskTransition, stored: StoredTask
) -> bool:
    """JOB CREATED for the transition's next listener; False once every one has completed."""
    listeners = listeners_of(ctx, key, under_way.event)
    if under_way.listener_index >= len(listeners):
        return False
    listener = listeners[under_way.listener_index]
    element = instance_state.instance(ctx.state, stored.element_instance_key)
    if element is None:
        return True
    new_job(
        ctx,
        stored.element_instance_key,
        instance_state.value_of(element),
        element_id=stored.element_id,
        job_type=listener.job_type,
        retries=listener.retries,
        headers=_listener_headers(key, under_way),
        kind=JobKind.TASK_LISTENER,
        event=JobListenerEventType[LISTENED[under_way.event].upper()],
    )
    return True


def _listener_headers(key: int, under_way: TaskTransition) -> tuple[tuple[str, str], ...]:
    """The task's headers and, as Zeebe hands them to a task listener, its attributes (each
    only when set)."""
    pending = under_way.task
    headers = dict(pending.custom_headers)
    attributes: dict[str, Any] = {
        "assignee": pending.assignee,
        "candidateGroups": json_text.write(list(pending.candidate_groups))
        if pending.candidate_groups
        else "",
        "candidateUsers": json_text.write(list(pending.candidate_users))
        if pending.candidate_users
        else "",
        "dueDate": pending.due_date,
        "followUpDate": pending.follow_up_date,
        "formKey": str(pending.form_key) if pending.form_key > 0 else "",
        "action": under_way.action,
        "changedAttributes": json_text.write(sorted(under_way.changed_attributes))
        if under_way.changed_attributes
        else "",
        "priority": str(pending.priority) if pending.priority > 0 else "",
        "userTaskKey": str(key),
    }
    headers.update({_HEADERS + name: text for name, text in attributes.items() if text})
    return tuple(headers.items())
