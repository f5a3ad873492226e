"""The appliers of TIMER events: a created timer is stored and indexed by its due date; a
triggered or cancelled one is removed (a cycle creates its next timer anew)."""

from __future__ import annotations

from partita.processing.dispatch import Handlers
from partita.processing.timer.state import TIMER_DUE, TIMERS
from partita.protocol.intents import TimerIntent
from partita.protocol.records import Record
from partita.protocol.values import TimerValue
from partita.state import PartitionDb
from partita.state.stored import Timer

handlers = Handlers()


@handlers.applier(TimerIntent.CREATED)
def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, TimerValue)
    db.column(TIMERS).upsert(
        (value.element_instance_key, record.key),
        Timer(
            element_instance_key=value.element_instance_key,
            process_instance_key=value.process_instance_key,
            process_definition_key=value.process_definition_key,
            due_date=value.due_date,
            target_element_id=value.target_element_id,
            repetitions=value.repetitions,
        ),
    )
    db.column(TIMER_DUE).upsert((value.due_date, value.element_instance_key, record.key), None)


@handlers.applier(TimerIntent.TRIGGERED, TimerIntent.CANCELED)
def apply_removed(record: Record, db: PartitionDb) -> None:
    """TRIGGERED or CANCELED: the timer is gone (a cycle creates its next timer anew)."""
    value = record.value
    assert isinstance(value, TimerValue)
    stored = db.column(TIMERS).get((value.element_instance_key, record.key))
    if stored is None:
        return
    db.column(TIMERS).delete((value.element_instance_key, record.key))
    db.column(TIMER_DUE).delete((stored.due_date, value.element_instance_key, record.key))
