"""What a gateway request can fail with, once for both protocols: a `Status` (gRPC's code and
the REST API's HTTP status) and a message that says what was wrong.

Rejections read as Zeebe's gateway words them, `Command 'CREATE' rejected with code
'NOT_FOUND': <reason>`, and map as Zeebe maps them: INVALID_STATE is FAILED_PRECONDITION (409),
PROCESSING_ERROR is INTERNAL, backpressure is RESOURCE_EXHAUSTED (429), no reply in time is
DEADLINE_EXCEEDED (504) and an unreachable Kafka is UNAVAILABLE (503).
"""

from __future__ import annotations

from enum import Enum

from partita.client.errors import CommandRejectedError
from partita.errors import PartitaError
from partita.protocol.enums import RejectionType


class Status(Enum):
    """A failure's gRPC status code (its name) and HTTP status."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT", 400
    UNAUTHENTICATED = "UNAUTHENTICATED", 401
    PERMISSION_DENIED = "PERMISSION_DENIED", 403
    NOT_FOUND = "NOT_FOUND", 404
    ALREADY_EXISTS = "ALREADY_EXISTS", 409
    FAILED_PRECONDITION = "FAILED_PRECONDITION", 409
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED", 429
    INTERNAL = "INTERNAL", 500
    UNIMPLEMENTED = "UNIMPLEMENTED", 501
    UNAVAILABLE = "UNAVAILABLE", 503
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED", 504

    @property
    def http(self) -> int:
        return int(self.value[1])


class GatewayError(PartitaError):
    """A request the gateway answers with `status` and `message` instead of a result."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_BY_REJECTION = {
    RejectionType.INVALID_ARGUMENT: Status.INVALID_ARGUMENT,
    RejectionType.NOT_FOUND: Status.NOT_FOUND,
    RejectionType.ALREADY_EXISTS: Status.ALREADY_EXISTS,
    RejectionType.INVALID_STATE: Status.FAILED_PRECONDITION,
    RejectionType.PROCESSING_ERROR: Status.INTERNAL,
    RejectionType.EXCEEDED_BATCH_RECORD_SIZE: Status.INVALID_ARGUMENT,
    RejectionType.RESOURCE_EXHAUSTED: Status.RESOURCE_EXHAUSTED,
}


def rejected(error: CommandRejectedError) -> GatewayError:
    """The gateway's answer to a rejected command."""
    record = error.record
    kind = record.rejection_type.name if record.rejection_type else "REJECTED"
    status = _BY_REJECTION.get(record.rejection_type, Status.INTERNAL)  # type: ignore[arg-type]
    return GatewayError(
        status, f"Command '{record.intent.name}' rejected with code '{kind}': {error.reason}"
    )


def invalid(message: str) -> GatewayError:
    return GatewayError(Status.INVALID_ARGUMENT, message)


def unimplemented(what: str, why: str) -> GatewayError:
    """An operation of Zeebe's APIs that Partita's engine does not have yet."""
    return GatewayError(Status.UNIMPLEMENTED, f"{what} is not supported by Partita: {why}")
