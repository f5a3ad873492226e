"""The queue column families the state tests check."""

from __future__ import annotations

from partita.state import ColumnFamilies

ACTIVATABLE = ColumnFamilies.JOB_ACTIVATABLE
