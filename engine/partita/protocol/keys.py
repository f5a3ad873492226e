"""Keys that encode their partition, as in Zeebe: `key = (partition_id << 51) | counter`.

`partition_id = Kafka partition + 1`, so no real key is 0 and -1 means "no key". The top 13 bits
hold the partition id (up to 8191 partitions), the low 51 bits a per-partition counter.
"""

from __future__ import annotations

from partita.protocol.errors import InvalidKeyError

PARTITION_BITS = 13
COUNTER_BITS = 51
MAX_COUNTER = (1 << COUNTER_BITS) - 1
MAX_PARTITION_ID = (1 << PARTITION_BITS) - 1
_SIGN_SAFE_MAX_PARTITION_ID = (1 << (PARTITION_BITS - 1)) - 1  # keys stay positive Java longs


def partition_id_of_kafka(kafka_partition: int) -> int:
    """Zeebe-style partition id of a Kafka partition (Kafka partition + 1)."""
    return kafka_partition + 1


def encode_key(partition_id: int, counter: int) -> int:
    """The key of the `counter`-th entity created on partition `partition_id` (>= 1)."""
    if not 1 <= partition_id <= _SIGN_SAFE_MAX_PARTITION_ID:
        raise InvalidKeyError(
            f"partition id {partition_id} out of range 1..{_SIGN_SAFE_MAX_PARTITION_ID}"
        )
    if not 0 <= counter <= MAX_COUNTER:
        raise InvalidKeyError(f"key counter {counter} out of range 0..{MAX_COUNTER}")
    return (partition_id << COUNTER_BITS) | counter


def partition_id_of_key(key: int) -> int:
    """The partition id a key was created on; InvalidKeyError for -1 and other non-keys."""
    partition_id = key >> COUNTER_BITS
    if key <= 0 or partition_id < 1:
        raise InvalidKeyError(f"{key} is not an entity key (no partition id in its top bits)")
    return partition_id


def kafka_partition_of_key(key: int) -> int:
    """The Kafka partition that owns the entity with this key."""
    return partition_id_of_key(key) - 1


def counter_of_key(key: int) -> int:
    return key & MAX_COUNTER
