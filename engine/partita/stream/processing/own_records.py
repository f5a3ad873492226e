"""The log offsets only a partition's own committed records hold, so its log consumer need not
look at them (`partita.stream.processing.state_machine`, steps 2 and 5).

Each committed transaction whose client-command copies came first, with nothing else landing
among its records and none of them a command left to process, names the range its records
hold (`Landing.written`). When its copies also landed where expected, right past this
producer's last record before them, the one offset in between is that earlier transaction's
commit marker (nothing else fits there), so the range starts there (`Landing.own_from`).

Read back, a record inside a range is passed over by its offset, without its headers. Ranges
that chain from where the consumer stands to the end of the last one mean none of it needs
reading at all: the consumer is moved past them.
"""

from __future__ import annotations

from collections import deque

WRITTEN_RANGES = 64
"""Ranges kept until read back; older ones are dropped, and their records are then told apart
by their headers, as any record is."""


class OwnRanges:
    __slots__ = ("ranges",)

    def __init__(self) -> None:
        self.ranges: deque[tuple[int, int]] = deque(maxlen=WRITTEN_RANGES)
        """(start, last) in offset order: every offset from start to last is this partition's
        own record or its commit marker (the per-record loop reads this deque directly)."""

    def add(self, written: tuple[int, int], own_from: int | None) -> None:
        """The range of a committed transaction's records; `own_from` the marker before them
        when its copies landed where expected."""
        first, last = written
        self.ranges.append((first if own_from is None else own_from, last))

    def end_from(self, position: int) -> int:
        """Past the last range when every offset from `position` to its end is in a range
        (they chain through `position` and through markers); -1 otherwise."""
        for start, last in self.ranges:
            if last < position:
                continue
            if start > position:
                return -1  # an offset not known to be its own: read the log from here
            position = last + 1
        return position
