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

from collections.abc import Iterable
from dataclasses import dataclass

from partita.config import Config
from partita.config.settings import SKIP_RECORDS

SKIP_RECORDS_ENV = SKIP_RECORDS.env


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
    and the item when one is malformed."""
    return SkipList(SKIP_RECORDS.parse(text, SKIP_RECORDS.env))


def of_config(config: Config) -> SkipList:
    """The skip list of `config`'s namespace (PARTITA_SKIP_RECORDS)."""
    return SkipList(config.skip_records)
