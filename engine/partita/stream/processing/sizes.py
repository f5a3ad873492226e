"""Records too large for Kafka, caught while their command can still be rejected.

The log topic takes records up to `max.message.bytes`; the codec refuses anything larger. A
command whose events would not fit is rejected EXCEEDED_BATCH_RECORD_SIZE with nothing applied
(as in Zeebe), and the worker goes on. Only records whose large fields could get near the limit
are encoded to check, so the common case costs a few attribute reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec.structs import replace

from partita.processing import ProcessingOutput
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.errors import RecordTooLargeError
from partita.protocol.records import Record
from partita.protocol.values import VALUE_TYPES


def oversized_records(
    codec: RecordCodec, output: ProcessingOutput, mark: tuple[int, ...]
) -> str | None:
    """Why a record written since `mark` cannot go to Kafka, or None. A reply too large for a
    record (the variables of an awaited instance) is replaced by a rejection that says so: the
    command that completed the instance stands."""
    sizers, limit = _SIZERS, codec.max_record_bytes
    for _, record in output.records[mark[0] :]:
        sizer = sizers.get(type(record.value))
        if sizer is None or sizer(record.value) * 4 <= limit:
            continue  # most records: nothing large, or even all 4-byte UTF-8 would fit
        problem = _too_large(codec, record)
        if problem is not None:
            return (
                f"{problem}; the command was not applied. Keep large payloads out of process"
                " variables (store them elsewhere and pass a reference)"
            )
    for index in range(mark[1], len(output.replies)):
        address, reply = output.replies[index]
        sizer = sizers.get(type(reply.value))
        if sizer is None or sizer(reply.value) * 4 <= limit:
            continue  # as above
        problem = _too_large(codec, reply)
        if problem is None:
            continue
        value: Any = reply.value
        if hasattr(value, "variables"):
            value = replace(value, variables="{}")
        output.replies[index] = (
            address,
            replace(
                reply,
                record_type=RecordType.COMMAND_REJECTION,
                value=value,
                rejection_type=RejectionType.EXCEEDED_BATCH_RECORD_SIZE,
                rejection_reason=(
                    f"the result is too large to send: {problem}; fetch fewer variables"
                ),
            ),
        )
    return None


def _too_large(codec: RecordCodec, record: Record) -> str | None:
    if _payload_chars(record.value) * 4 <= codec.max_record_bytes:
        return None  # even all 4-byte UTF-8 characters would fit
    try:
        codec.encode(record)
    except RecordTooLargeError as exc:
        return str(exc)
    return None


_LARGE_FIELDS = frozenset({"variables", "value", "resource", "resources", "jobs"})
_SMALL_CLASSES = frozenset(
    cls for cls in VALUE_TYPES if _LARGE_FIELDS.isdisjoint(cls.__struct_fields__)
)
"""Value classes with none of the large fields (most lifecycle events): nothing to add up."""


def _variables_chars(value: Any) -> int:
    return len(value.variables or "")


def _sizer(cls: type[Any]) -> Callable[[Any], int] | None:
    """What adds up the large fields of a `cls` value: None when it has none, the length of
    its variables when that is all it has (most values that have any), else `_payload_chars`."""
    large = _LARGE_FIELDS.intersection(cls.__struct_fields__)
    if not large:
        return None
    return _variables_chars if large == {"variables"} else _payload_chars


def _payload_chars(value: object) -> int:
    """The size of a value's potentially large fields: variable documents, a variable's value,
    BPMN resources, the jobs of a batch."""
    if type(value) in _SMALL_CLASSES:
        return 0
    size = len(getattr(value, "variables", "") or "")
    single = getattr(value, "value", None)
    if isinstance(single, str):
        size += len(single)
    resource = getattr(value, "resource", None)
    if isinstance(resource, bytes):
        size += len(resource)
    for part in getattr(value, "resources", ()) or ():
        size += len(part.resource)
    for job in getattr(value, "jobs", ()) or ():
        size += len(job.variables)
    return size


_SIZERS = {cls: sizer for cls in VALUE_TYPES if (sizer := _sizer(cls)) is not None}
"""Value class -> what adds up its large fields (`_sizer`), for the classes that have any."""
