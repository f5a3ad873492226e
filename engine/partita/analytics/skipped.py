"""Log records a downstream reader (the exporter, the analytics, `partita tail`) cannot use.

Such a record (a body that does not decode behind a valid header, or one whose folding or
conversion raises) is reported, one warning naming its topic, partition, offset, value type,
intent and what failed, counted, and skipped: a downstream reader never stops or loops on one
record. The engine itself does not skip: its replay stops the partition instead (see
`partita.stream.errors.UnappliableRecordError`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from partita.protocol.headers import INTENT, VALUE_TYPE, header

_LOG = logging.getLogger("partita.skipped")


@dataclass(slots=True)
class SkippedRecords:
    """Reports and counts the records `reader` skipped."""

    reader: str
    emit: Callable[[str], None] | None = None
    """Where reports go (e.g. a command's output); None: a warning of the `partita.skipped`
    logger."""
    count: int = 0
    by_partition: Counter[int] = field(default_factory=Counter)
    last: str = ""
    """The newest report."""

    def report(
        self, topic: str, partition: int, offset: int, headers: Any, error: BaseException
    ) -> str:
        """Report the record at `topic/partition@offset` (with `headers`) that failed with
        `error`; returns the report line. Never raises."""
        text = str(error) or type(error).__name__
        line = (
            f"{self.reader}: skipped {topic}/{partition}@{offset}"
            f" ({_text(headers, VALUE_TYPE)} {_text(headers, INTENT)}):"
            f" {type(error).__name__}: {text}"
        )
        self.count += 1
        self.by_partition[partition] += 1
        self.last = line
        if self.emit is None:
            _LOG.warning("%s", line)
        else:
            self.emit(line)
        return line

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.count,
            "byPartition": {str(p): n for p, n in sorted(self.by_partition.items())},
            "last": self.last,
        }


def _text(headers: Any, name: str) -> str:
    value = header(headers, name)
    return "?" if value is None else value.decode("ascii", "replace")[:64] or "?"
