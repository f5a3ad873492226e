"""The log's records in a batch: which are commands for this partition to process.

Step 2 and 3 of `partita.stream.processing.state_machine`: records the engine knows to be its own
committed records are passed over by offset (`partita.stream.processing.own_records`); events,
rejections and already processed copies of client commands are skipped by header, without decoding;
the remaining commands are decoded (an undecodable one is answered by a rejection naming its
offset), and one that belongs to another partition is forwarded there unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from confluent_kafka import Message

from partita.log.clients import offset_of
from partita.processing import ProcessingContext
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType
from partita.protocol.errors import DecodeError, ProtocolError, RecordTooLargeError
from partita.protocol.headers import ReplyTo, is_pending_command, reply_to, without_processed
from partita.protocol.records import Record
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing.failures import reject_undecodable
from partita.stream.processing.own_records import OwnRanges

_LOG = logging.getLogger("partita.processing")
# Enum members read off their class cost ~130 ns each on Python 3.11 (see partita.protocol.enums):
# the per-record path compares against module names bound once.
_COMMAND = RecordType.COMMAND

Pending = list[tuple[int, Message, Any]]
"""(log offset, message, headers) of the records still to decode."""


class LogCommands:
    """The commands on one partition's log still to process, batch by batch."""

    def __init__(  # noqa: PLR0917 - built in one place, by the processing state machine
        self,
        codec: RecordCodec,
        topic: str,
        partition: int,
        route: Callable[[Record], int],
        metrics: ProcessingMetrics,
        clock: Callable[[], float],
        skipped: frozenset[int] = frozenset(),
    ) -> None:
        self.codec = codec
        self.topic = topic
        self.partition = partition
        self.route = route
        self.metrics = metrics
        self.clock = clock
        self.skipped = skipped
        """Log offsets an operator listed in PARTITA_SKIP_RECORDS: never processed."""
        self.own = OwnRanges()
        """Log offsets only this partition's own committed records hold (`own_records`): read
        back, passed over without their headers (a busy log is mostly such records)."""

    def pending(self, messages: Sequence[Message], first: int) -> tuple[Pending, int]:
        """The log records of a batch from offset `first` on that may be commands to process,
        and the last log offset read (-1: none new)."""
        pending = []
        last_offset = -1
        written = self.own.ranges
        for message in messages:
            offset = offset_of(message)
            if offset < first:
                continue
            last_offset = offset
            if written:
                while written and written[0][1] < offset:
                    written.popleft()
                if written and written[0][0] <= offset:
                    continue  # read back from a range of its own records: nothing to process
            headers = message.headers()
            if is_pending_command(headers):
                pending.append((offset, message, headers))
        return pending, last_offset

    def commands(
        self, context: ProcessingContext, pending: Pending
    ) -> Iterator[tuple[Record, ReplyTo | None]]:
        """This partition's commands among `pending`, decoded, in log order, with their reply
        addresses; undecodable records are rejected and commands of other partitions forwarded
        (both written to `context` as they come, between the commands processed)."""
        for offset, message, headers in pending:
            if self.skipped and offset in self.skipped:
                _LOG.warning(
                    "partition %d: skipping the command at offset %d (PARTITA_SKIP_RECORDS)",
                    self.partition,
                    offset,
                )
                continue
            try:
                record = self.codec.decode(
                    message.value(),  # type: ignore[arg-type]  # None is a typed DecodeError
                    topic=self.topic,
                    partition=self.partition,
                    offset=offset,
                )
            except (DecodeError, RecordTooLargeError) as exc:
                self._reject_undecodable(context, offset, headers, exc)
                continue
            if record.record_type is not _COMMAND:
                continue
            target = self.route(record)
            if target != self.partition:
                context.output.forwarded.append(
                    (target, message.value() or b"", without_processed(headers))
                )
                self.metrics.forwarded += 1
                continue
            yield record, reply_to(headers)

    def _reject_undecodable(
        self, context: ProcessingContext, offset: int, headers: Any, exc: ProtocolError
    ) -> None:
        """Answer a record that is not a valid command with a rejection naming its offset."""
        self.metrics.undecodable += 1
        self.metrics.rejections += 1
        reason = (
            f"record at offset {offset} of {self.topic}/{self.partition} is not a valid"
            f" command: {exc.reason}"
        )
        reject_undecodable(context, reason, offset, headers, int(self.clock() * 1000))
        _LOG.warning("partition %d: %s", self.partition, reason)
