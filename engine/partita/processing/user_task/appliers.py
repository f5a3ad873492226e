"""The appliers of USER_TASK events: a task is stored at CREATING, moves through its
transitional states and back to CREATED, and is removed when it completes or is cancelled."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.dispatch import Handlers
from partita.processing.instance import state as instance_state
from partita.processing.user_task.state import USER_TASKS, stored_task
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import Record
from partita.protocol.values import UserTaskValue
from partita.state import PartitionDb

handlers = Handlers()

_TRANSITIONS = {
    Task.CREATED: "CREATED",
    Task.ASSIGNING: "ASSIGNING",
    Task.CLAIMING: "CLAIMING",
    Task.UPDATING: "UPDATING",
    Task.COMPLETING: "COMPLETING",
    Task.CANCELING: "CANCELING",
}


@handlers.applier(Task.CREATING)
def apply_creating(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, UserTaskValue)
    db.column(USER_TASKS).upsert(record.key, stored_task(value, "CREATING"))
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


@handlers.applier(Task.ASSIGNED, Task.UPDATED)
def apply_changed(record: Record, db: PartitionDb) -> None:
    """The task as the event carries it (the new assignee, or the updated attributes), back
    in state CREATED."""
    value = record.value
    assert isinstance(value, UserTaskValue)
    stored = db.column(USER_TASKS).get(record.key)
    if stored is not None:
        changed = stored_task(value, "CREATED")
        db.column(USER_TASKS).upsert(
            record.key, replace(changed, creation_timestamp=stored.creation_timestamp)
        )


@handlers.applier(Task.COMPLETED, Task.CANCELED)
def apply_removed(record: Record, db: PartitionDb) -> None:
    db.column(USER_TASKS).delete(record.key)
