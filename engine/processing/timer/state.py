"""Timers in state: `timer` by (owning element instance key, timer key), indexed by (due
date, owner, key) in `timer_due_date` for the due-date checker. A timer start event's timer has
no owner (NO_OWNER)."""

from __future__ import annotations

from typing import Any

from engine.protocol.values import TimerValue
from engine.state import ColumnFamilies

TIMERS = ColumnFamilies.TIMER
TIMER_DUE = ColumnFamilies.TIMER_DUE_DATE
NO_OWNER = -1
"""The element instance key of a timer start event's timer (no instance owns it)."""


def timer_value(stored: dict[str, Any]) -> TimerValue:
    return TimerValue(**stored)
