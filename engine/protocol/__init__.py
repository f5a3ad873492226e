"""The record protocol: enums, intents, records, keys, routing, headers and the Avro codec.

No Kafka and no RocksDB here: producers, the engine and analytics all build on this package.
"""

from engine.protocol.codec import RecordCodec
from engine.protocol.enums import RecordType, RejectionType, ValueType
from engine.protocol.intents import Intent, intent_for
from engine.protocol.records import NO_KEY, Record, command, event

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
