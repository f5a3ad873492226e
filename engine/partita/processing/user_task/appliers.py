"""The appliers of USER_TASK events: a task is stored at CREATING and moves through its
transitional states; each transitional event also stores the transition under way (the values
it ends with), which CORRECTED changes and the final event (CREATED, ASSIGNED, UPDATED, a
denial) ends, back in state CREATED; the task is removed when it completes or is cancelled."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.dispatch import Handlers
from partita.processing.instance import state as instance_state
from partita.processing.user_task.state import TRANSITIONS, USER_TASKS, stored_task
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import Record
from partita.protocol.values import UserTaskValue
from partita.state import PartitionDb
from partita.state.stored import TaskTransition

handlers = Handlers()

_TRANSITIONS = {
    Task.ASSIGNING: "ASSIGNING",
    Task.CLAIMING: "CLAIMING",
    Task.UPDATING: "UPDATING",
    Task.COMPLETING: "COMPLETING",
    Task.CANCELING: "CANCELING",
}


def _begin(record: Record, db: PartitionDb, state: str) -> None:
    value = record.value
    assert isinstance(value, UserTaskValue)
    db.column(TRANSITIONS).upsert(
        record.key,
        TaskTransition(
            event=state,
            task=stored_task(value, state),
            variables=value.variables,
            action=value.action,
            changed_attributes=tuple(value.changed_attributes),
            initial_assignee=value.assignee if state == "CREATING" else "",
        ),
    )


@handlers.applier(Task.CREATING)
def apply_creating(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, UserTaskValue)
    db.column(USER_TASKS).upsert(record.key, stored_task(value, "CREATING"))
    _begin(record, db, "CREATING")
    element = instance_state.instance(db, value.element_instance_key)
    if element is not None:
        db.column(instance_state.INSTANCES).upsert(
            value.element_instance_key, replace(element, user_task_key=record.key)
        )


@handlers.applier(*_TRANSITIONS)
def apply_transition(record: Record, db: PartitionDb) -> None:
    stored = db.column(USER_TASKS).get(record.key)
    if stored is not None:
        state = _TRANSITIONS[record.intent]  # type: ignore[index]
        db.column(USER_TASKS).upsert(record.key, replace(stored, state=state))
        _begin(record, db, state)


@handlers.applier(Task.CORRECTED)
def apply_corrected(record: Record, db: PartitionDb) -> None:
    """A task listener's corrections: the values the transition ends with."""
    value = record.value
    assert isinstance(value, UserTaskValue)
    under_way = db.column(TRANSITIONS).get(record.key)
    if under_way is not None:
        corrected = stored_task(value, under_way.event)
        db.column(TRANSITIONS).upsert(record.key, replace(under_way, task=corrected))


@handlers.applier(Task.CREATED, Task.ASSIGNED, Task.UPDATED)
def apply_changed(record: Record, db: PartitionDb) -> None:
    """The task as the event carries it (created, the new assignee, the updated attributes),
    in state CREATED; its transition has ended."""
    value = record.value
    assert isinstance(value, UserTaskValue)
    stored = db.column(USER_TASKS).get(record.key)
    if stored is not None:
        changed = stored_task(value, "CREATED")
        db.column(USER_TASKS).upsert(
            record.key, replace(changed, creation_timestamp=stored.creation_timestamp)
        )
    db.column(TRANSITIONS).delete(record.key)


@handlers.applier(Task.ASSIGNMENT_DENIED, Task.UPDATE_DENIED, Task.COMPLETION_DENIED)
def apply_denied(record: Record, db: PartitionDb) -> None:
    """A task listener denied the transition: the task is as it was, in state CREATED."""
    stored = db.column(USER_TASKS).get(record.key)
    if stored is not None:
        db.column(USER_TASKS).upsert(record.key, replace(stored, state="CREATED"))
    db.column(TRANSITIONS).delete(record.key)


@handlers.applier(Task.COMPLETED, Task.CANCELED)
def apply_removed(record: Record, db: PartitionDb) -> None:
    db.column(USER_TASKS).delete(record.key)
    db.column(TRANSITIONS).delete(record.key)
