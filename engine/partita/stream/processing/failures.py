"""What a batch writes for a command it cannot process: an ERROR event and a PROCESSING_ERROR
rejection for one that failed twice (the ERROR bans its instance), and an INVALID_ARGUMENT
rejection, naming the offset, for a record that is not a valid command."""

from __future__ import annotations

import traceback
from typing import Any

from partita.processing import ProcessingContext
from partita.protocol.enums import RejectionType
from partita.protocol.headers import reply_to
from partita.protocol.intents import ErrorIntent
from partita.protocol.records import Record
from partita.protocol.values import ErrorValue
from partita.stream.processing.admission import refused_placeholder

_STACKTRACE_CHARS = 4000


def write_processing_error(
    context: ProcessingContext, command: Record, instance: int, exc: Exception
) -> None:
    """The ERROR event (banning `instance`) and the rejection of `command`, which raised `exc`."""
    value = ErrorValue(
        exception_message=f"{type(exc).__name__}: {exc}",
        stacktrace="".join(traceback.format_exception(exc))[-_STACKTRACE_CHARS:],
        error_event_position=command.position,
        process_instance_key=instance,
    )
    context.append_event(ErrorIntent.CREATED, value, command.key)
    context.reject(
        RejectionType.PROCESSING_ERROR,
        f"unexpected error processing {command.value_type.name} {command.intent.name}:"
        f" {type(exc).__name__}: {exc}",
    )


def reject_undecodable(
    context: ProcessingContext, reason: str, offset: int, headers: Any, now_ms: int
) -> None:
    """The rejection of the record at `offset`. It repeats the value type and intent from the
    headers when they are valid, so a producer's reply listener can match it; otherwise it is
    an ERROR value."""
    context.begin(refused_placeholder(headers, reason, offset), reply_to(headers), now_ms)
    context.reject(RejectionType.INVALID_ARGUMENT, reason)
