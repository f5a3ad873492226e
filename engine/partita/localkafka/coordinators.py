"""Probes of a local broker's group and transaction coordinators, one per partition of
`__consumer_offsets` and of `__transaction_state`: a broker answers metadata before those
coordinators have loaded, and `LocalBroker.up` waits for every probe to answer. The probes'
librdkafka logs go to a logger that prints nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from partita.log.admin import admin_client
from partita.log.clients import new_producer
from partita.log.security import KafkaAccess

Probe = Callable[[float], str | None]
"""(timeout in seconds) -> None once the coordinator answers, else why not."""

_QUIET = logging.getLogger("partita.librdkafka.coordinators")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def coordinator_probes(access: KafkaAccess, partitions: int) -> list[Probe]:
    """A probe of every group coordinator, then of every transaction coordinator, of a broker
    whose internal topics have `partitions` partitions."""
    admin = admin_client(access)
    ids = coordinator_probe_ids(partitions)
    return [
        *(partial(_group_coordinator_problem, admin, i) for i in ids),
        *(partial(_transaction_coordinator_problem, access, i) for i in ids),
    ]


def _java_string_hash(text: str) -> int:
    """Java's `String.hashCode()` of ASCII `text` (a signed 32-bit int)."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def coordinator_probe_ids(partitions: int) -> list[str]:
    """For each partition of a coordinator topic of `partitions` partitions, an id whose
    coordinator lives on it, in partition order. Kafka maps a group or transactional id to
    partition `Utils.abs(id.hashCode()) % partitions` of `__consumer_offsets` or
    `__transaction_state`, so asking about each of these ids reaches every coordinator."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < partitions:
        candidate = f"partita.coordinator-probe.{n}"
        hashed = _java_string_hash(candidate)
        found.setdefault(0 if hashed == -(1 << 31) else abs(hashed) % partitions, candidate)
        n += 1
    return [found[p] for p in range(partitions)]


def _reason(exc: KafkaException) -> str:
    error = exc.args[0]
    return error.str() if isinstance(error, KafkaError) else str(error)


def _group_coordinator_problem(admin: AdminClient, group: str, timeout: float) -> str | None:
    """None once the coordinator of `group` answers for it (a group nobody has joined is an
    answer too); else why not."""
    try:
        admin.describe_consumer_groups([group], request_timeout=timeout)[group].result()
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
            return None
        return _reason(exc)
    return None


def _transaction_coordinator_problem(
    access: KafkaAccess, transactional_id: str, timeout: float
) -> str | None:
    """None once the coordinator of `transactional_id` gives a producer its id (which also
    takes the broker's producer-id block, as every idempotent producer's first request
    does); else why not. librdkafka's retries go to a logger that prints nothing."""
    producer = new_producer(access, {"transactional.id": transactional_id, "logger": _QUIET})
    try:
        producer.init_transactions(timeout)
    except KafkaException as exc:
        return _reason(exc)
    return None
