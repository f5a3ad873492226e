"""What a partition's processing raises to the worker that owns it."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError

from partita.errors import PartitaError
from partita.protocol.headers import INTENT, VALUE_TYPE, header
from partita.protocol.records import Record


class TaskFencedError(Exception):
    """The partition has a newer owner (or the producer hit a fatal error): drop the task."""


class AbortedBatchError(Exception):
    """The transaction was aborted; state changes were dropped and the consumer rewound."""


class LogTruncatedError(PartitaError):
    """The log no longer holds the events a store needs next (it was truncated past the
    store's last applied position): the store must be replaced by a snapshot, never replayed
    from wherever the log now starts."""


class UnappliableRecordError(PartitaError):
    """An EVENT on the log that replay, a standby or `verify-replay` cannot apply: its body
    does not decode, or its applier raised (state it expects is missing, a value it needs is
    absent). Replay is deterministic, so every later replay of the partition stops at the same
    record: the partition's task must stop (and say so in `partita status`), never retry.

    `value_type` and `intent` come from the decoded record or, when the body does not decode,
    from the record's headers ("?" when absent). `cause` says what failed.
    """

    def __init__(  # noqa: PLR0917
        self,
        topic: str,
        partition: int,
        offset: int,
        value_type: str,
        intent: str,
        cause: str,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.value_type = value_type
        self.intent = intent
        self.cause = cause
        super().__init__(
            f"partition {partition}: the {value_type} {intent} event at offset {offset} of"
            f" {topic} cannot be applied: {cause}. Every replay of the partition, on any machine,"
            f" stops there. Find out what wrote it (`partita tail --partition"
            f" {partition} --from-beginning`), then either deploy an engine build that applies"
            f" it or skip it on every worker of the namespace with"
            f" PARTITA_SKIP_RECORDS={partition}:{offset} (docs/operations.md, 'A record the"
            f" engine cannot apply')"
        )

    @classmethod
    def of(
        cls, message: Any, record: Record | None, error: BaseException
    ) -> UnappliableRecordError:
        """The error for `message` (a consumed log record) whose decoding (`record` None) or
        applying (`record` the decoded record) raised `error`."""
        if record is not None:
            value_type, intent = record.value_type.name, record.intent.name
            cause = f"its applier raised {_describe(error)}"
        else:
            headers = message.headers() or ()
            value_type = header_text(headers, VALUE_TYPE)
            intent = header_text(headers, INTENT)
            cause = f"its body does not decode: {_describe(error)}"
        return cls(
            message.topic(), message.partition(), message.offset(), value_type, intent, cause
        )


def header_text(headers: Any, name: str) -> str:
    """Header `name` as text for a message ("?" when absent), cut to 64 characters."""
    value = header(headers, name)
    if value is None:
        return "?"
    return value.decode("ascii", "replace")[:64] or "?"


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


_TRANSIENT = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._WAIT_COORD,
    }
)


def kafka_error_of(exc: BaseException) -> KafkaError | None:
    """The KafkaError an exception from confluent-kafka carries (KafkaException, or what a
    rebalance callback's failure surfaces as), else None."""
    argument = exc.args[0] if exc.args else None
    return argument if isinstance(argument, KafkaError) else None


def rejoin_after(error: KafkaError) -> bool:
    """True for an error a worker outlives by joining the group again (the broker or its
    coordinator was away), as opposed to a fatal or configuration error that must stop it."""
    return not error.fatal() and (error.retriable() or error.code() in _TRANSIENT)
