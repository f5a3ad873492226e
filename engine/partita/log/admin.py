"""Admin access to a Kafka cluster and the readiness probe every command runs first.

The probe fails fast on what retrying cannot fix: refused credentials, an untrusted
certificate, a listener speaking another protocol are reported within a second or two with the
setting to check, instead of after the whole timeout (librdkafka itself retries forever).
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ClusterMetadata

from partita.errors import PartitaError
from partita.log.clients import ErrorReporter, explain, is_security_error, new_admin
from partita.log.security import KafkaAccess

_QUIET = logging.getLogger("partita.librdkafka.probe")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
_LOG = logging.getLogger("partita.kafka.wait")  # not under the librdkafka RepeatFilter

PROGRESS_EVERY_S = 5.0
"""How often a wait for the cluster says it is still waiting."""


class KafkaUnavailableError(PartitaError):
    """The cluster did not answer; the message names the address and what to try."""


class KafkaAccessError(KafkaUnavailableError):
    """The cluster answered but refused this client (credentials, TLS trust, protocol)."""


def admin_client(access: KafkaAccess, **extra: Any) -> AdminClient:
    """An AdminClient of `access`. librdkafka's connection noise goes to a quiet logger."""
    return new_admin(access, {"logger": _QUIET, **extra})


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _all_ports_open(bootstrap: str) -> bool:
    """True when every host:port of `bootstrap` accepts TCP connections."""
    addresses = [a.strip().rsplit(":", 1) for a in bootstrap.split(",") if a.strip()]
    try:
        return bool(addresses) and all(port_open(host, int(port)) for host, port in addresses)
    except ValueError:
        return False


def answers_metadata(access: KafkaAccess, timeout: float = 3.0) -> bool:
    """True when the cluster returns metadata with at least one broker within `timeout`."""
    try:
        metadata = admin_client(access).list_topics(timeout=timeout)
    except KafkaException:
        return False
    return len(metadata.brokers) > 0


def wait_for_metadata(access: KafkaAccess, timeout: float) -> None:
    """Block until the cluster answers this client's metadata requests.

    KafkaAccessError as soon as librdkafka reports an authentication, TLS or authorization
    failure (never later than `timeout`); KafkaUnavailableError when nothing answered in time.
    Both name the setting to check."""
    reporter = ErrorReporter(access, _QUIET)
    cluster_metadata(admin_client(access, error_cb=reporter), reporter, access, timeout)


def cluster_metadata(
    handle: AdminClient | Consumer | Producer,
    reporter: ErrorReporter,
    access: KafkaAccess,
    timeout: float,
) -> ClusterMetadata:
    """`handle.list_topics()` within `timeout`, failing fast like `wait_for_metadata` (the
    handle must have been built with `reporter` as its `error_cb`, and must not be assigned
    partitions yet: its `poll` is called to deliver errors). Every `PROGRESS_EVERY_S` of the
    wait, a line says it goes on."""
    started = time.monotonic()
    deadline = started + timeout
    next_progress = started + PROGRESS_EVERY_S
    while True:
        try:
            metadata = handle.list_topics(timeout=min(0.5, max(0.05, timeout)))
            if metadata.brokers:
                return metadata
        except KafkaException as exc:
            error = exc.args[0]
            if isinstance(error, KafkaError) and is_security_error(error):
                raise KafkaAccessError(explain(error, access)) from None
        handle.poll(0)  # librdkafka calls error_cb only from poll()
        if reporter.fatal and reporter.problem is not None:
            raise KafkaAccessError(reporter.problem)
        now = time.monotonic()
        if next_progress <= now < deadline:
            next_progress = now + PROGRESS_EVERY_S
            _LOG.warning(
                "no answer from Kafka at %s yet (%.0f s of %.0f s); still trying, Ctrl-C to stop",
                access.bootstrap,
                now - started,
                timeout,
            )
        if now >= deadline:
            seen = f" Last error: {reporter.problem}" if reporter.problem else ""
            if _all_ports_open(access.bootstrap):
                seen += (
                    f" Something accepts connections at {access.bootstrap} but does not answer"
                    f" Kafka over {access.protocol}: the listener may expect another"
                    f" security.protocol (settings from {access.where})."
                )
            raise KafkaUnavailableError(
                f"Kafka at {access.bootstrap} did not answer metadata requests within"
                f" {timeout:.0f} s ({access.describe()}, settings from {access.where})."
                " Check the address (KAFKA_BOOTSTRAP_SERVERS) or start a local broker with"
                f" `partita kafka up`.{seen}"
            )


def groups_with_members(admin: AdminClient, groups: list[str], timeout: float = 5.0) -> set[str]:
    """Those of `groups` that have at least one member now (a group never joined has none).
    KafkaException when the cluster cannot say (e.g. no Describe right on a group)."""
    if not groups:
        return set()
    found = set()
    for name, future in admin.describe_consumer_groups(groups, request_timeout=timeout).items():
        try:
            description = future.result()
        except KafkaException as exc:
            error = exc.args[0]
            if isinstance(error, KafkaError) and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
                continue
            raise
        if description.members:
            found.add(name)
    return found
