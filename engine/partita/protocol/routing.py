"""Which Kafka partition a command belongs on (docs/architecture.md, "Routing: which partition
a command belongs on").

Message correlation keys use Kafka's Java default partitioner (`toPositive(murmur2(key)) % n`),
so a Java producer with `key=correlationKey` lands on the right partition unchanged; librdkafka
clients get the same with `partitioner=murmur2_random`.
"""

from __future__ import annotations

from partita.protocol.enums import ValueType
from partita.protocol.errors import InvalidKeyError
from partita.protocol.intents import DeploymentIntent, MessageIntent, SignalIntent
from partita.protocol.keys import kafka_partition_of_key
from partita.protocol.records import Record

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF
# Enum members read off their class cost ~130 ns each on Python 3.11 (see partita.protocol.enums):
# the per-record path compares against module names bound once (an intent names its value type).
_VARIABLE_DOCUMENT = ValueType.VARIABLE_DOCUMENT
_MESSAGE_SUBSCRIPTION = ValueType.MESSAGE_SUBSCRIPTION
_DISTRIBUTE, _DEPLOY = DeploymentIntent.DISTRIBUTE, DeploymentIntent.CREATE
_PUBLISH = MessageIntent.PUBLISH
_BROADCAST = SignalIntent.BROADCAST


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: the MurmurHash2 Java clients partition with, as a signed int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    end = length - (length & 3)
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[end + 2] << 16
    if rest >= 2:
        h ^= data[end + 1] << 8
    if rest >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(value: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit."""
    return value & 0x7FFFFFFF


def partition_for_correlation_key(correlation_key: str, partition_count: int) -> int:
    """The Kafka partition of the messages (and message subscriptions) of a correlation key."""
    if partition_count < 1:
        raise ValueError(f"partition_count must be >= 1, got {partition_count}")
    return to_positive(murmur2(correlation_key.encode("utf-8"))) % partition_count


def partition_for_key(key: int, partition_count: int) -> int:
    """The Kafka partition owning the entity `key`; InvalidKeyError when it is not on this log."""
    partition = kafka_partition_of_key(key)
    if partition >= partition_count:
        raise InvalidKeyError(
            f"key {key} belongs to partition {partition}, but the log has {partition_count}"
        )
    return partition


def partition_for_command(record: Record, partition_count: int, default: int) -> int:
    """The Kafka partition a command belongs on (docs/architecture.md, "Routing"); `default`
    for commands that may go anywhere (process instance creation) or carry an invalid key (the
    owner of `default` then rejects them)."""
    if record.value_type is _VARIABLE_DOCUMENT:
        scope_key = record.value.scope_key  # type: ignore[union-attr]
        try:
            return partition_for_key(scope_key, partition_count)
        except InvalidKeyError:
            return default
    if record.intent is _DISTRIBUTE or record.intent is _BROADCAST:
        return default  # addressed to one partition on purpose, with another's key
    if record.value_type is _MESSAGE_SUBSCRIPTION:  # lives with its messages
        return partition_for_correlation_key(
            record.value.correlation_key,  # type: ignore[union-attr]
            partition_count,
        )
    if record.key > 0:
        try:
            return partition_for_key(record.key, partition_count)
        except InvalidKeyError:
            return default
    if record.intent is _PUBLISH:
        return partition_for_correlation_key(
            record.value.correlation_key,  # type: ignore[union-attr]
            partition_count,
        )
    if record.intent is _DEPLOY:
        return 0
    return default
