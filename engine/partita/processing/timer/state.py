"""Timers in state: `timer` by (owning element instance key, timer key), indexed by (due
date, owner, key) in `timer_due_date` for the due-date checker. A timer start event's timer has
no owner (NO_OWNER)."""

from __future__ import annotations

from partita.protocol.values import TimerValue
from partita.state import ColumnFamilies
from partita.state.stored import Timer

TIMERS = ColumnFamilies.TIMER
TIMER_DUE = ColumnFamilies.TIMER_DUE_DATE
NO_OWNER = -1
"""The element instance key of a timer start event's timer (no instance owns it)."""


def timer_value(stored: Timer) -> TimerValue:
    return TimerValue(
        element_instance_key=stored.element_instance_key,
        process_instance_key=stored.process_instance_key,
        process_definition_key=stored.process_definition_key,
        due_date=stored.due_date,
        target_element_id=stored.target_element_id,
        repetitions=stored.repetitions,
    )
