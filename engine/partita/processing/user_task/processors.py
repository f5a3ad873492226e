"""USER_TASK ASSIGN, CLAIM, UPDATE and COMPLETE: a client's commands on a Zeebe user task,
each needing the task CREATED (Zeebe's rejection messages). Each begins its transition
(ASSIGNING, CLAIMING, UPDATING, COMPLETING), which ends, after the task listeners of its
event if any (`transitions`), with the final event that answers the client; a completion
merges its variables as a job completion's and completes the element. COMPLETE_TASK_LISTENER
and DENY_TASK_LISTENER go on with a transition once a task listener's job completed."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from partita.processing.behavior.variables import variables_document
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.dispatch import Handlers
from partita.processing.user_task import transitions
from partita.processing.user_task.creation import is_date_time
from partita.processing.user_task.state import task, task_value, transition
from partita.protocol.enums import RejectionType
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import Record
from partita.protocol.values import UserTaskValue
from partita.state.stored import UserTask

handlers = Handlers()

UPDATABLE = ("candidateGroupsList", "candidateUsersList", "dueDate", "followUpDate", "priority")
"""The attributes an UPDATE may change (named as in its `changedAttributes`)."""


def _created(ctx: ProcessingContext, key: int, operation: str) -> UserTask:
    stored = task(ctx.state, key)
    expected = f"Expected to {operation} user task with key '{key}'"
    if stored is None:
        raise RejectionError(
            RejectionType.NOT_FOUND, f"{expected}, but no such user task was found"
        )
    if stored.state != "CREATED":
        raise RejectionError(
            RejectionType.INVALID_STATE, f"{expected}, but it is in state '{stored.state}'"
        )
    return stored


def _command(command: Record) -> UserTaskValue:
    value = command.value
    assert isinstance(value, UserTaskValue)
    return value


@handlers.processor(Task.ASSIGN)
def assign(command: Record, ctx: ProcessingContext) -> None:
    """Assign (replacing any assignee) or, with an empty assignee, unassign."""
    value = _command(command)
    stored = _created(ctx, command.key, "assign")
    action = value.action or "assign"
    _assign(ctx, command.key, stored, value.assignee, action=action, intent=Task.ASSIGNING)


@handlers.processor(Task.CLAIM)
def claim(command: Record, ctx: ProcessingContext) -> None:
    """Assign to the claimer unless someone else has the task."""
    value = _command(command)
    stored = _created(ctx, command.key, "claim")
    expected = f"Expected to claim user task with key '{command.key}'"
    if not value.assignee:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"{expected}, but provided assignee is empty"
        )
    if stored.assignee and stored.assignee != value.assignee:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"{expected}, but it has already been assigned"
        )
    action = value.action or "claim"
    _assign(ctx, command.key, stored, value.assignee, action=action, intent=Task.CLAIMING)


def _assign(
    ctx: ProcessingContext, key: int, stored: UserTask, assignee: str, *, action: str, intent: Task
) -> None:
    changed = ("assignee",) if assignee != stored.assignee else ()
    event = task_value(key, stored, assignee=assignee, action=action, changed_attributes=changed)
    transitions.begin(ctx, key, intent, event)


@handlers.processor(Task.UPDATE)
def update(command: Record, ctx: ProcessingContext) -> None:
    """Set the attributes the command names in `changedAttributes` (an empty value clears
    one); the events list those whose value changed."""
    value = _command(command)
    stored = _created(ctx, command.key, "update")
    unknown = sorted(set(value.changed_attributes) - set(UPDATABLE))
    if unknown:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"cannot update {', '.join(unknown)} of a user task; updatable: {', '.join(UPDATABLE)}",
        )
    if not 0 <= value.priority <= 100:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"priority must be 0 to 100, not {value.priority}",
        )
    for name, text in (("dueDate", value.due_date), ("followUpDate", value.follow_up_date)):
        if name in value.changed_attributes and text and not is_date_time(text):
            raise RejectionError(
                RejectionType.INVALID_ARGUMENT,
                f"{name} must be an ISO 8601 date-time with an offset, e.g."
                f" 2026-12-31T17:00:00Z, not '{text}'",
            )
    current = task_value(command.key, stored)
    wanted: dict[str, Any] = {
        "candidateGroupsList": ("candidate_groups_list", value.candidate_groups_list),
        "candidateUsersList": ("candidate_users_list", value.candidate_users_list),
        "dueDate": ("due_date", value.due_date),
        "followUpDate": ("follow_up_date", value.follow_up_date),
        "priority": ("priority", value.priority),
    }
    changes = {
        field: new
        for name, (field, new) in wanted.items()
        if name in value.changed_attributes and getattr(current, field) != new
    }
    changed = tuple(name for name, (field, _) in wanted.items() if field in changes)
    event = replace(current, **changes, action=value.action or "update", changed_attributes=changed)
    transitions.begin(ctx, command.key, Task.UPDATING, event)


@handlers.processor(Task.COMPLETE)
def complete(command: Record, ctx: ProcessingContext) -> None:
    """Complete the task with variables, merged as a job completion's, and its element."""
    value = _command(command)
    stored = _created(ctx, command.key, "complete")
    variables_document(value.variables)  # refused here when it is no JSON object
    event = task_value(
        command.key, stored, variables=value.variables or "{}", action=value.action or "complete"
    )
    transitions.begin(ctx, command.key, Task.COMPLETING, event)


@handlers.processor(Task.COMPLETE_TASK_LISTENER)
def complete_task_listener(command: Record, ctx: ProcessingContext) -> None:
    """A task listener's job completed: its corrections (the attributes the command's
    `changedAttributes` names), then the next listener or the end of the transition."""
    value = _command(command)
    if transition(ctx.state, command.key) is None:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"user task {command.key} has no transition under way"
        )
    transitions.correct(ctx, command.key, value)


@handlers.processor(Task.DENY_TASK_LISTENER)
def deny_task_listener(command: Record, ctx: ProcessingContext) -> None:
    """A task listener denied the transition."""
    value = _command(command)
    if transition(ctx.state, command.key) is None:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"user task {command.key} has no transition under way"
        )
    transitions.deny(ctx, command.key, value.denied_reason)
