"""Kafka headers of Partita records.

Every record repeats its record type, value type and intent as short ASCII strings, so consumers
(the engine skipping its own events, analytics) filter without decoding the Avro body. Requests
may carry Spring Kafka's reply headers; the engine answers to that address.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from partita.protocol.records import Record

RECORD_TYPE = "recordType"
VALUE_TYPE = "valueType"
INTENT = "intent"

INGRESS_OFFSET = "partitaIngressOffset"
"""On a client command the engine copied from `<ns>.commands` into the log: the ingress offset
it came from. Such a command was processed in the transaction that wrote it, so the engine's
log consumer skips it; only the engine writes the log, so the header can be trusted there."""

PROCESSED = "partitaProcessed"
"""On the last record a batch's transaction writes to its own partition of the log, as its last
header: `<log offset>,<ingress offset>`, the last offsets of the log and of ingress the partition
had processed once that transaction commits (-1: none). Committed atomically with the batch's
events, it tells replay and standbys where processing resumes, also when the engine group's
offsets trail (the engine sends them at most every 100 ms,
`partita.stream.processing.state_machine`)."""

REPLY_TOPIC = "kafka_replyTopic"
REPLY_PARTITION = "kafka_replyPartition"
CORRELATION_ID = "kafka_correlationId"

COMMAND = b"COMMAND"
EVENT = b"EVENT"
COMMAND_REJECTION = b"COMMAND_REJECTION"

Headers = list[tuple[str, str | bytes | None]]
"""Headers as confluent-kafka takes and returns them."""


_EVENT_HEADER = (RECORD_TYPE, EVENT)
"""The first header of every event the engine writes (`record_headers`): compared whole, it
tells most records read back apart without searching their headers."""

_HEADER_CACHE: dict[object, dict[object, Headers]] = {}
"""record type -> intent -> headers (an intent names its value type): two lookups by identity,
no key tuple to build, for every record written."""


def record_headers(record: Record) -> Headers:
    """The filter headers of `record` (a shared list per kind of record: do not mutate)."""
    by_intent = _HEADER_CACHE.get(record.record_type)
    cached = by_intent.get(record.intent) if by_intent is not None else None
    if cached is None:
        cached = [
            (RECORD_TYPE, record.record_type.value.encode()),
            (VALUE_TYPE, record.value_type.value.encode()),
            (INTENT, record.intent.name.encode()),
        ]
        _HEADER_CACHE.setdefault(record.record_type, {})[record.intent] = cached
    return cached


def header(headers: Headers | dict[str, str | bytes | None] | None, name: str) -> bytes | None:
    """The first value of header `name`, or None."""
    if headers:
        items = headers.items() if isinstance(headers, dict) else headers
        for key, value in items:
            if key == name:
                return value.encode() if isinstance(value, str) else value
    return None


def is_event(headers: Headers | dict[str, str | bytes | None] | None) -> bool:
    """True when the headers mark an EVENT (the records replay applies)."""
    if type(headers) is list and headers and headers[0] == _EVENT_HEADER:
        return True  # how the engine writes every event
    return header(headers, RECORD_TYPE) == EVENT


def is_command(headers: Headers | dict[str, str | bytes | None] | None) -> bool:
    """True when the headers mark a COMMAND; the hot-path filter that avoids decoding events.

    Records without the header are treated as commands so that they get decoded and, if they
    are not valid commands, rejected with a reason instead of being skipped silently.
    """
    value = header(headers, RECORD_TYPE)
    return value is None or value == COMMAND


def is_pending_command(headers: Headers | dict[str, str | bytes | None] | None) -> bool:
    """True for a log record the engine still has to process: a command (see `is_command`)
    that is not an already processed copy of a client command (`INGRESS_OFFSET`)."""
    if not headers:
        return True
    if type(headers) is list and headers[0] == _EVENT_HEADER:
        return False  # most often the engine's own event, read back
    items = headers.items() if isinstance(headers, dict) else headers
    for key, value in items:
        if key == INGRESS_OFFSET:
            return False
        if key == RECORD_TYPE and value not in (COMMAND, "COMMAND"):
            return False
    return True


@dataclass(frozen=True, slots=True)
class ReplyTo:
    """Where to answer a request (Spring Kafka's ReplyingKafkaTemplate conventions)."""

    topic: str
    partition: int | None
    correlation_id: bytes

    def headers(self) -> Headers:
        result: Headers = [
            (REPLY_TOPIC, self.topic.encode()),
            (CORRELATION_ID, self.correlation_id),
        ]
        if self.partition is not None:
            result.append((REPLY_PARTITION, struct.pack(">i", self.partition)))
        return result


def reply_to(headers: Headers | dict[str, str | bytes | None] | None) -> ReplyTo | None:
    """The reply address of a request, or None when it carries no (valid) `kafka_replyTopic`.

    `kafka_replyPartition` is a 4-byte big-endian int; any other length is ignored (the reply
    then goes to the topic with the correlation id as its key's partition choice left to Kafka).
    """
    topic = header(headers, REPLY_TOPIC)
    if not topic:
        return None
    raw_partition = header(headers, REPLY_PARTITION)
    partition = None
    if raw_partition is not None and len(raw_partition) == 4:
        partition = struct.unpack(">i", raw_partition)[0]
    try:
        topic_name = topic.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return ReplyTo(topic_name, partition, header(headers, CORRELATION_ID) or b"")


def processed_header(log_offset: int, ingress_offset: int) -> tuple[str, bytes]:
    """The PROCESSED header for these positions."""
    return PROCESSED, f"{log_offset},{ingress_offset}".encode()


def without_processed(headers: Headers | dict[str, str | bytes | None] | None) -> Headers:
    """`headers` but PROCESSED: what a log command keeps when it is forwarded to another
    partition, whose positions it must not name (a spilled follow-up may carry it)."""
    items = headers.items() if isinstance(headers, dict) else headers or []
    return [(name, value) for name, value in items if name != PROCESSED]


def processed_positions(headers: Headers | None) -> tuple[int, int] | None:
    """The positions a PROCESSED header names, when it is the last header (where the engine
    puts it), else None. A malformed value is None too: only the engine writes the log."""
    if type(headers) is not list or len(headers) < 4:
        return None
    name, value = headers[-1]
    if name != PROCESSED or not isinstance(value, bytes):
        return None
    log, _, ingress = value.partition(b",")
    try:
        return int(log), int(ingress)
    except ValueError:
        return None
