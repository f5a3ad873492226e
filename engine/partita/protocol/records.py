"""The record envelope: one COMMAND, EVENT or COMMAND_REJECTION of the log."""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import replace

from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import Intent
from partita.protocol.values import VALUE_TYPES, RecordValue

NO_KEY = -1
"""The key of a record about no entity yet (a new command) and of unset key fields."""
# Enum members read off their class cost ~130 ns each on Python 3.11 (see partita.protocol.enums):
# the per-record path compares against module names bound once.
_COMMAND, _EVENT = RecordType.COMMAND, RecordType.EVENT


class Record(Struct, frozen=True, gc=False):
    """A record of the log. `position` is its Kafka offset: -1 until read back from Kafka."""

    record_type: RecordType
    value_type: ValueType
    intent: Intent
    value: RecordValue
    key: int = NO_KEY
    partition_id: int = -1
    source_record_position: int = -1
    timestamp: int = -1
    rejection_type: RejectionType | None = None
    rejection_reason: str = ""
    engine_version: str = ""
    record_version: int = 1
    position: int = -1

    @property
    def is_command(self) -> bool:
        return self.record_type is _COMMAND

    @property
    def is_event(self) -> bool:
        return self.record_type is _EVENT

    def with_position(self, position: int) -> Record:
        return replace(self, position=position)


def command(intent: Intent, value: RecordValue, key: int = NO_KEY, **fields: object) -> Record:
    """A COMMAND record for `value` (its value type is derived from the value's class)."""
    return Record(_COMMAND, VALUE_TYPES[type(value)], intent, value, key, **fields)  # type: ignore[arg-type]


def event(intent: Intent, value: RecordValue, key: int, **fields: object) -> Record:
    """An EVENT record for `value`."""
    return Record(_EVENT, VALUE_TYPES[type(value)], intent, value, key, **fields)  # type: ignore[arg-type]
