"""The record protocol: enums, intents, records, keys, routing, headers and the Avro codec.

No Kafka and no RocksDB here: producers, the engine and analytics all build on this package.
"""

from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import Intent, intent_for
from partita.protocol.records import NO_KEY, Record, command, event

__all__ = [
    "NO_KEY",
    "Intent",
    "Record",
    "RecordCodec",
    "RecordType",
    "RejectionType",
    "ValueType",
    "command",
    "event",
    "intent_for",
]
