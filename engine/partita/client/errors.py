"""What a client call raises: one exception class per rejection type, so callers can write
`except NotFoundError` instead of comparing strings, and a timeout when no reply came."""

from __future__ import annotations

from partita.errors import PartitaError
from partita.protocol.enums import RejectionType
from partita.protocol.records import Record


class CommandRejectedError(PartitaError):
    """The engine rejected the command; `rejection_type` and `reason` say why, `record` is the
    COMMAND_REJECTION itself (its key names the entity)."""

    def __init__(self, rejection: Record) -> None:
        self.record = rejection
        self.rejection_type: RejectionType | None = rejection.rejection_type
        self.reason = rejection.rejection_reason
        kind = rejection.rejection_type.name if rejection.rejection_type else "REJECTED"
        super().__init__(
            f"{rejection.value_type.name} {rejection.intent.name} rejected ({kind}): {self.reason}"
        )


class InvalidArgumentError(CommandRejectedError):
    """The command itself is wrong: a bad variable document, an invalid BPMN file, ..."""


class NotFoundError(CommandRejectedError):
    """The command names something that does not exist (any more): a finished job, an
    unknown process id, a completed instance."""


class AlreadyExistsError(CommandRejectedError):
    """A duplicate: e.g. a message with a messageId that is still alive."""


class InvalidStateError(CommandRejectedError):
    """The entity exists but cannot take this command now (a job waiting for its back-off or
    an incident, an instance that is not active, ...)."""


class ProcessingError(CommandRejectedError):
    """Processing the command failed unexpectedly in the engine; the reason says where."""


class BatchTooLargeError(CommandRejectedError):
    """The command's result did not fit in one Kafka transaction's record-size budget."""


class ResourceExhaustedError(CommandRejectedError):
    """Backpressure: the partition is over its limit (docs/limits.md) and did not process the
    command. The clients raise it only after sending the command again with back-off for
    `retry_for` seconds; `attempts` says how often it was sent, `waited` for how long."""

    def __init__(self, rejection: Record, attempts: int = 1, waited: float = 0.0) -> None:
        super().__init__(rejection)
        self.attempts = attempts
        self.waited = waited
        if attempts > 1:
            self.args = (f"{self.args[0]} (sent {attempts} times over {waited:.1f} s)",)


class ReplyTimeoutError(PartitaError):
    """No reply within the timeout: is a worker running for the namespace?"""


_BY_TYPE: dict[RejectionType | None, type[CommandRejectedError]] = {
    RejectionType.INVALID_ARGUMENT: InvalidArgumentError,
    RejectionType.NOT_FOUND: NotFoundError,
    RejectionType.ALREADY_EXISTS: AlreadyExistsError,
    RejectionType.INVALID_STATE: InvalidStateError,
    RejectionType.PROCESSING_ERROR: ProcessingError,
    RejectionType.EXCEEDED_BATCH_RECORD_SIZE: BatchTooLargeError,
    RejectionType.RESOURCE_EXHAUSTED: ResourceExhaustedError,
}


def rejection_error(rejection: Record) -> CommandRejectedError:
    """The exception for a COMMAND_REJECTION: the subclass of its rejection type."""
    return _BY_TYPE.get(rejection.rejection_type, CommandRejectedError)(rejection)


def timeout_error(timeout: float, namespace: str, bootstrap: str) -> ReplyTimeoutError:
    return ReplyTimeoutError(
        f"no reply within {timeout:.0f} s; is a `partita worker` running for namespace"
        f" '{namespace}' at {bootstrap}?"
    )
