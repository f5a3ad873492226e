"""Admission of client commands from the ingress topic `<ns>.commands`.

Clients write commands to ingress; only the engine writes the log. Before a client record is
copied into the log it must be a decodable COMMAND whose intent a client may send
(`partita.protocol.intents.CLIENT_COMMANDS`) and whose keys belong to this log. Anything else is
refused: the refusal becomes a COMMAND_REJECTION (and a reply) that names the ingress offset,
and nothing of the record reaches the log. An admitted command is normalised (partition id,
timestamp, no source position, no rejection fields) so the log holds only what the engine
chose to write.

With the compiled codec, `Admission.take` runs the common case (a plain client command for
this partition, without keys to check) in compiled code (`Admitter` in native/src/admit.rs): it
takes only what `decide` would copy unchanged and hands every other record to `decide`, which
stays the one that refuses, forwards and says why (the parity fuzz test compares both).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import cast

from confluent_kafka import Message
from msgspec import Struct
from msgspec.structs import replace

from partita.log.clients import offset_of
from partita.processing import ProcessingContext
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.errors import InvalidKeyError, ProtocolError, RecordTooLargeError
from partita.protocol.headers import (
    INGRESS_OFFSET,
    INTENT,
    RECORD_TYPE,
    REPLY_TOPIC,
    VALUE_TYPE,
    Headers,
    ReplyTo,
    header,
    record_headers,
    reply_to,
)
from partita.protocol.intents import CLIENT_COMMANDS, ErrorIntent, intent_for
from partita.protocol.keys import kafka_partition_of_key
from partita.protocol.native import native_admitter
from partita.protocol.records import NO_KEY, Record
from partita.protocol.values import VALUE_CLASSES, ErrorValue
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing.backpressure import Backpressure, applies_to

_LOG = logging.getLogger("partita.processing")

# Enum members read off their class cost ~130 ns each on Python 3.11 (see partita.protocol.enums):
# the per-record path compares against module names bound once.
_COMMAND, _VARIABLE_DOCUMENT = RecordType.COMMAND, ValueType.VARIABLE_DOCUMENT

# The verdicts are msgspec Structs, not frozen dataclasses: one or two are built per client
# command, and a frozen dataclass's __init__ costs about a microsecond (object.__setattr__).


_NORMALISED = (
    "partition_id",
    "timestamp",
    "source_record_position",
    "rejection_type",
    "rejection_reason",
)
"""The fields of a client command `Admission.decide` replaces in its copy for the log, beside
its position (the compiled common case builds the copy with them so)."""


class Admitted(Struct, frozen=True, gc=False):
    record: Record
    """The command as the client wrote it, valid and decoded; `Admission.decide`
    normalises it for the log."""
    reply: ReplyTo | None
    offset: int
    """Its offset on the ingress topic."""


class Copy(Struct, frozen=True, gc=False):
    """An admitted command for this partition, ready to append to its log partition."""

    record: Record
    value: bytes
    headers: Headers
    reply: ReplyTo | None


class Forward(Struct, frozen=True, gc=False):
    """An admitted command for another partition: written, unprocessed, to its log partition
    (with its reply address), where that partition's owner processes it."""

    partition: int
    value: bytes
    headers: Headers


class Refused(Struct, frozen=True, gc=False):
    placeholder: Record
    """What the rejection repeats: the command when it decoded, else an empty value of the
    value type and intent its headers name (or an ERROR value)."""
    reply: ReplyTo | None
    rejection_type: RejectionType
    reason: str


class Admission:
    """The decisions about the ingress records of one partition: refuse, copy or forward."""

    def __init__(
        self,
        codec: RecordCodec,
        *,
        topic: str,
        partition: int,
        partition_count: int,
        route: Callable[[Record], int],
        metrics: ProcessingMetrics,
        backpressure: Backpressure | None = None,
    ) -> None:
        self.codec = codec
        self.metrics = metrics
        self.topic = topic
        self.partition = partition
        self.partition_count = partition_count
        self.route = route
        self.backpressure = backpressure
        self.compiled = native_admitter(
            codec.compiled,
            command=_COMMAND,
            intents=[intent for _, intent in CLIENT_COMMANDS],
            no_key_check=_VARIABLE_DOCUMENT,
            own=partition,
            route=None if partition_count == 1 else route,  # one partition: all go there
            normalised=[Record.__struct_fields__.index(name) for name in _NORMALISED],
            copy=Copy,
            reply_to=reply_to,
            headers_of=record_headers,
            ingress_offset=INGRESS_OFFSET,
        )
        """The common case of `take` compiled (None without the compiled codec): it copies
        the records `decide` would copy unchanged and hands every other one to `decide`."""

    def take(
        self,
        context: ProcessingContext,
        ingress: Sequence[Message],
        first: int,
        end: int,
        now: int,
        *,
        position: int,
    ) -> tuple[list[Copy], int]:
        """Decide on each ingress record of a batch from offset `first` on (`end`: the end of
        the partition's ingress, -1 when unknown): copies for this partition's log are
        returned, the first at log `position` and each next one past it (predicted or
        provisional positions: `partita.stream.processing.transaction`), forwards to other
        partitions and refusals (a rejection, and its reply) are written to `context`. Also returns
        the last ingress offset taken (-1: none)."""
        copies: list[Copy] = []
        metrics = self.metrics
        forwarded = context.output.forwarded
        compiled = self.compiled if type(ingress) is list else None
        backpressure = self.backpressure
        if backpressure is not None and backpressure.check(self.partition, end - first - 1):
            compiled = None  # some record may be refused: `decide` says which
        index, count = 0, len(ingress)
        while index < count:
            if compiled is not None:
                messages = cast("list[Message]", ingress)  # a list, or compiled is None
                index, taken = compiled.take(messages, index, first, now, position, copies)
                metrics.ingress += taken
                if index == count:
                    break
            message = ingress[index]
            index += 1
            offset = offset_of(message)
            if offset < first:
                continue
            metrics.ingress += 1
            verdict = self.decide(message, offset, end - offset - 1, now, position + len(copies))
            if isinstance(verdict, Copy):
                copies.append(verdict)
            elif isinstance(verdict, Forward):
                forwarded.append((verdict.partition, verdict.value, verdict.headers))
                metrics.forwarded += 1
            else:
                self._refuse(context, verdict, now)
        last = offset_of(ingress[-1]) if ingress else -1  # ingress comes in offset order
        return copies, last if last >= first else -1

    def _refuse(self, context: ProcessingContext, refused: Refused, now: int) -> None:
        """Answer an ingress record that does not reach the log with its rejection."""
        metrics = self.metrics
        metrics.rejections += 1
        if refused.rejection_type is RejectionType.RESOURCE_EXHAUSTED:
            metrics.backpressured += 1
        else:
            metrics.refused += 1
            _LOG.warning("partition %d: refused: %s", self.partition, refused.reason)
        context.begin(refused.placeholder, refused.reply, now)
        context.reject(refused.rejection_type, refused.reason)

    def decide(
        self, message: Message, offset: int, lag: int, now: int, position: int = -1
    ) -> Copy | Forward | Refused:
        """What to do with the record at `offset`; `lag` commands wait behind it. A copy is
        processed at log `position` (its encoding does not hold it)."""
        verdict = admit(
            self.codec,
            message,
            offset,
            topic=self.topic,
            partition=self.partition,
            partition_count=self.partition_count,
        )
        if not isinstance(verdict, Admitted):
            return verdict
        target = self.route(verdict.record)
        record = replace(  # one copy: what the log holds is what the engine chose to write
            # (the fields of _NORMALISED, and the position: the compiled case replaces them)
            verdict.record,
            partition_id=target + 1,
            timestamp=now,
            position=position,
            source_record_position=-1,
            rejection_type=None,
            rejection_reason="",
        )
        if self.backpressure is not None and applies_to(record.value_type, record.intent):
            overload = self.backpressure.check(self.partition, lag)
            if overload is not None:
                return Refused(
                    replace(
                        record, partition_id=-1, timestamp=verdict.record.timestamp, position=-1
                    ),
                    verdict.reply,
                    RejectionType.RESOURCE_EXHAUSTED,
                    overload,
                )
        try:
            value = self.codec.encode_agreed(record)  # decoded by the codec: kinds agree
        except RecordTooLargeError as exc:  # re-encoded a few bytes longer than it came
            return Refused(
                replace(record, position=-1),
                verdict.reply,
                RejectionType.EXCEEDED_BATCH_RECORD_SIZE,
                str(exc),
            )
        headers: Headers = list(record_headers(record))
        if target != self.partition:
            if verdict.reply is not None:
                headers.extend(verdict.reply.headers())
            return Forward(target, value, headers)
        headers.append((INGRESS_OFFSET, str(offset)))
        return Copy(record, value, headers, verdict.reply)


def admit(
    codec: RecordCodec,
    message: Message,
    offset: int,
    *,
    topic: str,
    partition: int,
    partition_count: int,
) -> Admitted | Refused:
    """Admit or refuse the ingress record `message` at `offset` of `topic`/`partition`. An
    admitted record is returned as it decoded (`Admission.decide` normalises it); a refusal
    says what was wrong and where."""
    headers = message.headers()
    declared, reply = _declared_and_reply(headers)
    if declared is not None and declared != b"COMMAND":
        kind = declared.decode("ascii", "replace")[:40]
        return _refused(
            headers,
            reply,
            f"{_where(offset, topic, partition)} is a {kind}: clients may write only COMMAND"
            f" records to {topic}",
        )
    try:
        record = codec.decode(
            message.value(),  # type: ignore[arg-type]  # None is a typed DecodeError
            topic=topic,
            partition=partition,
            offset=offset,
        )
    except ProtocolError as exc:
        where = _where(offset, topic, partition)
        return _refused(headers, reply, f"{where} is not a valid command: {exc.reason}")
    if record.record_type is not _COMMAND:
        return Refused(
            _placeholder(record.value_type, record.intent.name, ""),
            reply,
            RejectionType.INVALID_ARGUMENT,
            f"{_where(offset, topic, partition)} is a {record.record_type.name}: clients may"
            f" write only COMMAND records to {topic}",
        )
    if (record.value_type, record.intent) not in CLIENT_COMMANDS:
        return Refused(
            replace(record, position=-1),
            reply,
            RejectionType.INVALID_ARGUMENT,
            f"{record.value_type.name} {record.intent.name} is an intent only the engine may"
            f" write; {_where(offset, topic, partition)} came from a client and is refused"
            " (see docs/internals/records.md)",
        )
    key_problem = _foreign_key(record, partition_count)
    if key_problem is not None:
        return Refused(
            replace(record, position=-1),
            reply,
            RejectionType.INVALID_ARGUMENT,
            f"{_where(offset, topic, partition)}: {key_problem}",
        )
    return Admitted(record, reply, offset)


def _declared_and_reply(
    headers: Headers | dict[str, str | bytes | None] | None,
) -> tuple[bytes | None, ReplyTo | None]:
    """The record type a client's record declares in its headers (None: none), and its reply
    address: `header(headers, RECORD_TYPE)` and `reply_to(headers)`, in one look at headers
    without a reply address (most of them)."""
    if type(headers) is not list:
        return header(headers, RECORD_TYPE), reply_to(headers)
    declared: bytes | None = None
    seen = replied = False
    for key, value in headers:
        if key == RECORD_TYPE and not seen:
            seen = True
            declared = value.encode() if isinstance(value, str) else value
        elif key == REPLY_TOPIC:
            replied = True
    return declared, reply_to(headers) if replied else None


def _where(offset: int, topic: str, partition: int) -> str:
    """Where a refused record is, for its rejection's reason (built only on refusal)."""
    return f"record at offset {offset} of {topic}/{partition}"


def _foreign_key(record: Record, partition_count: int) -> str | None:
    """Why a key of `record` is outside every partition's key space of this log, or None."""
    if record.key == NO_KEY and record.value_type is not _VARIABLE_DOCUMENT:
        return None  # most client commands: nothing to check
    keys = [("key", record.key)]
    scope_key = getattr(record.value, "scope_key", None)
    if record.value_type is _VARIABLE_DOCUMENT and isinstance(scope_key, int):
        keys.append(("scopeKey", scope_key))
    for name, key in keys:
        if key == NO_KEY:
            continue
        try:
            owner = kafka_partition_of_key(key)
        except InvalidKeyError:
            return f"{name} {key} is not an entity key (-1 for none)"
        if owner >= partition_count:
            return (
                f"{name} {key} belongs to partition {owner}, but the log has {partition_count}"
                " partitions"
            )
    return None


def _refused(headers: object, reply: ReplyTo | None, reason: str) -> Refused:
    return Refused(
        refused_placeholder(headers, reason), reply, RejectionType.INVALID_ARGUMENT, reason
    )


def refused_placeholder(headers: object, reason: str, position: int = -1) -> Record:
    """What the rejection of a record that does not decode repeats: an empty command of the
    value type and intent its headers name, or an ERROR value naming `reason`."""
    value_type_name = (header(headers, VALUE_TYPE) or b"").decode("ascii", "replace")  # type: ignore[arg-type]
    intent_name = (header(headers, INTENT) or b"").decode("ascii", "replace")  # type: ignore[arg-type]
    value_type = ValueType.__members__.get(value_type_name)
    return _placeholder(value_type, intent_name, reason, position)


def _placeholder(
    value_type: ValueType | None, intent_name: str, reason: str, position: int = -1
) -> Record:
    """An empty command of the value type and intent a refused record claimed (so a reply
    listener can match the rejection), or an ERROR value when they are not valid. `position`:
    where the record is on the log (-1: it never reached the log)."""
    intent = intent_for(value_type, intent_name) if value_type is not None else None
    if value_type is not None and intent is not None:
        value = VALUE_CLASSES[value_type]()
        return Record(RecordType.COMMAND, value_type, intent, value, position=position)
    return Record(
        RecordType.COMMAND,
        ValueType.ERROR,
        ErrorIntent.CREATED,
        ErrorValue(exception_message=reason, error_event_position=position),
        position=position,
    )
