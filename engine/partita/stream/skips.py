"""The records an operator told the engine to skip: `PARTITA_SKIP_RECORDS`.

A record on the log that replay cannot apply stops its partition (UnappliableRecordError).
Replay must give the same state on every machine and at every start, warm or cold, so getting
past such a record cannot be a decision one worker takes: it is a list of log positions, the
same for every process of the namespace (workers, standbys, `verify-replay`), each
`partition:offset`, comma-separated:

    PARTITA_SKIP_RECORDS=2:1234,0:77

Replay, standbys and `verify-replay` leave a listed EVENT unapplied (and log it each time);
processing leaves a listed COMMAND unprocessed. A position that holds no record changes
nothing. Keep an entry for as long as the record is on the log and no snapshot past it is
the newest: a cold start without it stops at the record again (it never applies it silently).
See docs/operations.md, "A record the engine cannot apply".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from partita.errors import ConfigError

SKIP_RECORDS_ENV = "PARTITA_SKIP_RECORDS"


@dataclass(frozen=True, slots=True)
class SkipList:
    """Log positions (partition, offset) that are never applied nor processed."""

    positions: frozenset[tuple[int, int]] = frozenset()

    @classmethod
    def of(cls, positions: Iterable[tuple[int, int]]) -> SkipList:
        return cls(frozenset(positions))

    def offsets(self, partition: int) -> frozenset[int]:
        """The skipped offsets of `partition` (a set the per-record loops test membership in)."""
        return frozenset(o for p, o in self.positions if p == partition)

    def __contains__(self, position: object) -> bool:
        return position in self.positions

    def __bool__(self) -> bool:
        return bool(self.positions)

    def __str__(self) -> str:
        """The list in the form PARTITA_SKIP_RECORDS takes."""
        return ",".join(f"{p}:{o}" for p, o in sorted(self.positions))


NO_SKIPS = SkipList()


def parse(text: str) -> SkipList:
    """`partition:offset,...` (blanks allowed around items); ConfigError naming the setting
    and the item when one is not two non-negative integers."""
    positions = set()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        partition, colon, offset = item.partition(":")
        try:
            if not colon:
                raise ValueError
            position = (int(partition), int(offset))
        except ValueError:
            raise ConfigError(
                f"{SKIP_RECORDS_ENV}: {item!r} is not PARTITION:OFFSET (e.g. 2:1234); the value"
                " is a comma-separated list of such positions"
            ) from None
        if min(position) < 0:
            raise ConfigError(
                f"{SKIP_RECORDS_ENV}: {item!r}: partition and offset must not be negative"
            )
        positions.add(position)
    return SkipList(frozenset(positions))


def from_env(environ: Mapping[str, str] | None = None) -> SkipList:
    """The skip list of this process's namespace, from PARTITA_SKIP_RECORDS (empty if unset)."""
    return parse((os.environ if environ is None else environ).get(SKIP_RECORDS_ENV, ""))
