"""When a load generator sends instance n: at a steady rate, or taking turns with other paths.

Paths measured one after another see different moments of a shared machine, and on a 2-core
machine a moment can be twice as slow as the next. Taking turns, every path's load generator runs
at once, and each sends only in its own slots (`slot_s` long, one path after another, over and
over): every path meets the same slow and fast moments, while at any moment one path alone
loads the machine. The generators are separate processes, so the schedule is anchored at a wall
clock time (`time.time()`) they share.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Turns:
    start: float
    """Wall clock time (`time.time()`) of the first slot's start."""
    slot_s: float
    turns: int
    """How many paths take turns."""
    turn: int
    """This path's place among them, from 0."""

    def __post_init__(self) -> None:
        if self.slot_s <= 0 or not 0 <= self.turn < self.turns:
            raise ValueError(f"not a schedule of turns: {self}")

    def offset_s(self, n: int, rate: float) -> float:
        """Seconds from `start` to instance `n`'s send: `rate` per second within a slot (the
        slot's share: at least one instance each)."""
        per_slot = max(1, round(rate * self.slot_s))
        slot, within = divmod(n, per_slot)
        return (slot * self.turns + self.turn) * self.slot_s + within / rate

    def monotonic_start(self) -> float:
        """`start` on this process's monotonic clock (what the generators pace with)."""
        return self.start - time.time() + time.monotonic()

    def argument(self) -> str:
        """The schedule as one command-line argument (`parse` reads it back)."""
        return f"{self.start!r}:{self.slot_s!r}:{self.turns}:{self.turn}"

    @classmethod
    def parse(cls, text: str) -> Turns:
        start, slot_s, turns, turn = text.split(":")
        return cls(float(start), float(slot_s), int(turns), int(turn))


def send_times(rate: float, turns: Turns | None) -> tuple[float, Callable[[int], float] | None]:
    """The monotonic time to count from, and instance n's offset from it, at `rate` per
    second: from now on, or in `turns`. No offsets at rate 0 (saturation: as fast as the
    instances in flight allow), counted from now."""
    if rate <= 0:
        return time.monotonic(), None
    if turns is None:
        return time.monotonic(), lambda n: n / rate
    return turns.monotonic_start(), lambda n: turns.offset_s(n, rate)
