"""User tasks in state: `user_task` (task key -> the open task, with its lifecycle state) and
`user_task_transition` (task key -> the transition under way, with the values it ends with);
the element instance holds its task's key (`user_task_key`) so that terminating it cancels the
task."""

from __future__ import annotations

from msgspec.structs import replace

from partita.protocol.values import UserTaskValue
from partita.state import ColumnFamilies
from partita.state.stored import TaskTransition, UserTask
from partita.state.view import StateView

USER_TASKS = ColumnFamilies.USER_TASK
TRANSITIONS = ColumnFamilies.USER_TASK_TRANSITION


def task(db: StateView, key: int) -> UserTask | None:
    return db.column(USER_TASKS).get(key)


def transition(db: StateView, key: int) -> TaskTransition | None:
    return db.column(TRANSITIONS).get(key)


def task_value(key: int, stored: UserTask, **changes: object) -> UserTaskValue:
    """The USER_TASK value of a stored task, with `changes` (e.g. changed attributes)."""
    value = UserTaskValue(
        user_task_key=key,
        assignee=stored.assignee,
        candidate_groups_list=stored.candidate_groups,
        candidate_users_list=stored.candidate_users,
        due_date=stored.due_date,
        follow_up_date=stored.follow_up_date,
        external_form_reference=stored.external_form_reference,
        form_key=stored.form_key,
        custom_headers=stored.custom_headers,
        priority=stored.priority,
        creation_timestamp=stored.creation_timestamp,
        bpmn_process_id=stored.bpmn_process_id,
        process_definition_version=stored.process_definition_version,
        process_definition_key=stored.process_definition_key,
        process_instance_key=stored.process_instance_key,
        element_id=stored.element_id,
        element_instance_key=stored.element_instance_key,
    )
    return replace(value, **changes) if changes else value


def stored_task(value: UserTaskValue, state: str) -> UserTask:
    return UserTask(
        state=state,
        element_instance_key=value.element_instance_key,
        process_instance_key=value.process_instance_key,
        process_definition_key=value.process_definition_key,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_version=value.process_definition_version,
        element_id=value.element_id,
        assignee=value.assignee,
        candidate_groups=tuple(value.candidate_groups_list),
        candidate_users=tuple(value.candidate_users_list),
        due_date=value.due_date,
        follow_up_date=value.follow_up_date,
        priority=value.priority,
        external_form_reference=value.external_form_reference,
        custom_headers=dict(value.custom_headers),
        creation_timestamp=value.creation_timestamp,
        form_key=value.form_key,
    )


def transition_value(key: int, under_way: TaskTransition, **changes: object) -> UserTaskValue:
    """The USER_TASK value a transition ends with (its variables, action and changes)."""
    defaults: dict[str, object] = {
        "variables": under_way.variables,
        "action": under_way.action,
        "changed_attributes": under_way.changed_attributes,
    }
    return task_value(key, under_way.task, **(defaults | changes))


def open_tasks(db: StateView) -> list[tuple[int, UserTask]]:
    """Every open user task of the partition, by key (for queries and the CLI)."""
    return list(db.column(USER_TASKS).items())
