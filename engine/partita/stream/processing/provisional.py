"""Provisional log positions: a batch processes its client commands while their copies are
still on the way to the log (when their positions cannot be predicted:
`partita.stream.processing.transaction`).

A command's events name its log position (`sourceRecordPosition`), which Kafka assigns when
the copy arrives. Rather than wait for that round trip before processing, the batch produces
the copies, processes copy `i` at the provisional position `PROVISIONAL + i`, and once the
copies are delivered (before anything else of the batch is produced) `settle` puts the real
positions into every record the batch wrote.

Positions never reach state: appliers read keys and values, not positions, so the state a
batch builds is the same either way (the replay digest tests show it). A provisional position
is at least 2**62, beyond any real offset, and takes at least as many bytes as a real one, so
the batch's size checks stay on the safe side.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from partita.processing import ProcessingOutput
from partita.protocol.records import Record
from partita.protocol.values import ErrorValue

PROVISIONAL = 1 << 62
"""The provisional position of the batch's first copy; copy `i` has `PROVISIONAL + i`."""


def provisional(index: int) -> int:
    return PROVISIONAL + index


def describe(position: int) -> str:
    """A position for a log line: the offset, or which copy of the batch it stands for."""
    if position >= PROVISIONAL:
        return f"copy {position - PROVISIONAL} of this batch (not yet on the log)"
    return f"offset {position}"


def settle(output: ProcessingOutput, positions: Sequence[int]) -> None:
    """Replace every provisional position in `output` by the log position of its copy."""

    def real(position: int) -> int:
        if position < PROVISIONAL:
            return position
        index = position - PROVISIONAL
        if index >= len(positions):
            raise AssertionError(f"no copy {index} in a batch of {len(positions)} copies")
        return positions[index]

    def fix(record: Record) -> Record:
        source, position, value = record.source_record_position, record.position, record.value
        if source < PROVISIONAL and position < PROVISIONAL and type(value) is not ErrorValue:
            return record
        if type(value) is ErrorValue and value.error_event_position >= PROVISIONAL:
            value = replace(value, error_event_position=real(value.error_event_position))
        return replace(
            record, source_record_position=real(source), position=real(position), value=value
        )

    output.records[:] = [(partition, fix(record)) for partition, record in output.records]
    output.replies[:] = [(address, fix(record)) for address, record in output.replies]
    output.pushed[:] = [
        (topic, partition, key, fix(record)) for topic, partition, key, record in output.pushed
    ]
