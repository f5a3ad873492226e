"""Admin access to a Kafka cluster and the readiness probe used by `partita kafka up`."""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from engine.errors import PartitaError

_QUIET = logging.getLogger("partita.librdkafka.probe")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class KafkaUnavailableError(PartitaError):
    """The cluster did not answer; the message names the address and what to try."""


def admin_client(bootstrap: str, **extra: Any) -> AdminClient:
    """An AdminClient for `bootstrap`. librdkafka's connection noise goes to a quiet logger."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _QUIET}
    conf.update(extra)
    return AdminClient(conf)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def answers_metadata(bootstrap: str, timeout: float = 3.0) -> bool:
    """True when the cluster returns metadata with at least one broker within `timeout`."""
    try:
        metadata = admin_client(bootstrap).list_topics(timeout=timeout)
    except KafkaException:
        return False
    return len(metadata.brokers) > 0


def wait_for_metadata(bootstrap: str, timeout: float) -> None:
    """Block until the cluster answers metadata requests; KafkaUnavailableError after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if answers_metadata(bootstrap, timeout=max(0.5, min(3.0, remaining))):
            return
        if time.monotonic() >= deadline:
            raise KafkaUnavailableError(
                f"Kafka at {bootstrap} did not answer metadata requests within {timeout:.0f} s."
                " Check the address (KAFKA_BOOTSTRAP_SERVERS) or start a local broker with"
                " `partita kafka up`."
            )
        time.sleep(0.2)
