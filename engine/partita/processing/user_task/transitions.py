"""A user task's transitions and their task listeners (`zeebe:taskListeners`), as Zeebe 8.8 runs
them: the transitional event (CREATING, ASSIGNING, CLAIMING, UPDATING, COMPLETING, CANCELING),
then one job per listener of that event, in model order (`jobKind` TASK_LISTENER), then the
final event (CREATED, ASSIGNED, UPDATED, COMPLETED, CANCELED: the element's termination, which
waited, goes on). A listener's job completes with a result that may correct the task's
attributes (USER_TASK CORRECTED, the values the transition ends with) or,
when assigning, updating or completing, deny the transition (ASSIGNMENT_DENIED, UPDATE_DENIED,
COMPLETION_DENIED: the task as it was). A client's command is answered when its transition
ends: at once without listeners, else after the last one (its request waits in the partition's
map of awaited replies, as a created instance's result does); a denial answers it with Zeebe's
INVALID_STATE rejection."""

from __future__ import annotations

from typing import Any

from partita.processing.behavior import task_listeners
from partita.processing.behavior.after_termination import finish_termination
from partita.processing.behavior.results import answer_later, reject_later
from partita.processing.behavior.variables import propagate_variables, variables_document
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.user_task.state import task, task_value, transition, transition_value
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.values import UserTaskValue

_FINAL = {
    "CREATING": Task.CREATED,
    "ASSIGNING": Task.ASSIGNED,
    "CLAIMING": Task.ASSIGNED,
    "UPDATING": Task.UPDATED,
    "COMPLETING": Task.COMPLETED,
}
_DENIED = {
    "ASSIGNING": (Task.ASSIGNMENT_DENIED, Task.ASSIGN, "Assignment"),
    "CLAIMING": (Task.ASSIGNMENT_DENIED, Task.ASSIGN, "Assignment"),
    "UPDATING": (Task.UPDATE_DENIED, Task.UPDATE, "Update"),
    "COMPLETING": (Task.COMPLETION_DENIED, Task.COMPLETE, "Completion"),
}
DENIABLE = frozenset(_DENIED)
CORRECTABLE = {
    "assignee": "assignee",
    "candidateGroupsList": "candidate_groups_list",
    "candidateUsersList": "candidate_users_list",
    "dueDate": "due_date",
    "followUpDate": "follow_up_date",
    "priority": "priority",
}
"""The attributes a task listener may correct (Zeebe's names) -> the value's field."""
_HEADERS = "io.camunda.zeebe:"


def begin(ctx: ProcessingContext, key: int, intent: Task, event: UserTaskValue) -> None:
    """Write the transitional event `intent`; then the first task listener's job, or the end
    of the transition at once (the final event is then the command's reply)."""
    ctx.append_event(intent, event, key)
    if task_listeners.listeners_of(ctx, key, intent.name):
        reply_to = ctx.defer_reply()
        if reply_to is not None:
            ctx.awaiting.add(key, reply_to, (), ctx.now)
        go_on(ctx, key)
    else:
        finish(ctx, key, respond=True)


def go_on(ctx: ProcessingContext, key: int) -> None:
    """The next task listener's job, or the end of the transition once every one completed."""
    under_way = transition(ctx.state, key)
    stored = task(ctx.state, key)
    if under_way is None or stored is None:
        return
    if not task_listeners.next_job(ctx, key, under_way, stored):
        finish(ctx, key)


def finish(ctx: ProcessingContext, key: int, *, respond: bool = False) -> None:
    """The transition's final event, the answer to a client waiting for it, and what follows:
    the model's assignment after creation, the element's completion after COMPLETED."""
    under_way = transition(ctx.state, key)
    stored = task(ctx.state, key)
    if under_way is None or stored is None:
        return
    state = under_way.event
    if state == "CANCELING":  # the last canceling listener is done: the termination goes on
        ctx.append_event(Task.CANCELED, transition_value(key, under_way), key)
        finish_termination(ctx, stored.element_instance_key)
        return
    if state == "CREATING":
        initial = under_way.initial_assignee  # given by an assignment once created, as in Zeebe
        # without a model assignee, a creating listener's correction stays
        event = task_value(key, under_way.task, **({"assignee": ""} if initial else {}))
        ctx.append_event(Task.CREATED, event, key)
        element = instance_state.instance(ctx.state, stored.element_instance_key)
        if initial and element is not None and element.state == Instance.ELEMENT_ACTIVATED.name:
            assign_after_creation(ctx, key, initial)  # else the activation assigns it next
        return
    event = transition_value(key, under_way)
    if state != "COMPLETING":
        event = task_value(
            key, under_way.task, action=under_way.action, changed_attributes=_changed(stored, event)
        )
    final = ctx.append_event(_FINAL[state], event, key, respond=respond)
    answer_later(ctx, key, final)
    if state == "COMPLETING":
        _complete_element(ctx, stored.element_instance_key, under_way.variables)


def assign_after_creation(ctx: ProcessingContext, key: int, assignee: str) -> None:
    """The model's assignee, given once the task is created and its element activated."""
    stored = task(ctx.state, key)
    if stored is None or not assignee or stored.state != "CREATED":
        return
    event = task_value(key, stored, assignee=assignee, changed_attributes=("assignee",))
    begin(ctx, key, Task.ASSIGNING, event)


def _changed(stored: Any, event: UserTaskValue) -> tuple[str, ...]:
    """The attributes whose value the transition changed (Zeebe's names), in its order."""
    before = task_value(-1, stored)
    return tuple(
        name
        for name, field in CORRECTABLE.items()
        if getattr(before, field) != getattr(event, field)
    )


def _complete_element(ctx: ProcessingContext, element_key: int, variables: str) -> None:
    element = instance_state.instance(ctx.state, element_key)
    if element is None:
        return
    instance = instance_state.value_of(element)
    propagate_variables(ctx, element_key, variables_document(variables), instance)
    ctx.append_command(Instance.COMPLETE_ELEMENT, instance, element_key)


def correct(ctx: ProcessingContext, key: int, corrected: UserTaskValue) -> None:
    """A task listener's corrections (the fields of `corrected` its `changed_attributes` name):
    USER_TASK CORRECTED when one changes a value; then the next listener."""
    under_way = transition(ctx.state, key)
    if under_way is None:
        return
    if under_way.event == "CANCELING":  # a cancelled task keeps what it had
        go_on(ctx, key)
        return
    pending = transition_value(key, under_way)
    changes = {
        CORRECTABLE[name]: getattr(corrected, CORRECTABLE[name])
        for name in corrected.changed_attributes
        if getattr(corrected, CORRECTABLE[name]) != getattr(pending, CORRECTABLE[name])
    }
    if changes:
        names = tuple(n for n in corrected.changed_attributes if CORRECTABLE[n] in changes)
        event = transition_value(key, under_way, **changes, changed_attributes=names)
        ctx.append_event(Task.CORRECTED, event, key)
    go_on(ctx, key)


def deny(ctx: ProcessingContext, key: int, reason: str) -> None:
    """A task listener denied the transition: the task as it was, back in CREATED; the waiting
    client gets Zeebe's rejection."""
    under_way = transition(ctx.state, key)
    stored = task(ctx.state, key)
    if under_way is None or stored is None or under_way.event not in _DENIED:
        return
    denied, command, what = _DENIED[under_way.event]
    event = task_value(key, stored, action=under_way.action, denied_reason=reason)
    ctx.append_event(denied, event, key)
    reject_later(
        ctx,
        key,
        command,
        event,
        f"{what} of the User Task with key '{key}' was denied by Task Listener."
        f" Reason to deny: '{reason}'",
    )
