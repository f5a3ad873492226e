"""The one place Partita constructs confluent-kafka clients; every other module asks here.

- Every client gets the role's `KafkaAccess` (address, TLS, SASL, tuning from the properties
  files of `partita.log.security`) on top of the caller's settings, and an error callback that
  turns librdkafka's connection errors into one readable line per distinct problem (what failed
  and which setting to check), never a line per retry.
- The group consumer reads `read_committed`, commits offsets only inside transactions
  (`enable.auto.commit=false`) and uses cooperative rebalancing, so a rebalance moves only the
  partitions that change owner.
- Each partition task has its own transactional producer with `transactional.id =
  <ns>.engine.<partition>`: the id is stable per partition, so whoever owns a partition next
  fences the previous owner in `init_transactions()`.
- The per-record paths call `Producer.produce` with positional arguments, in its order
  `(topic, value, key, partition, on_delivery, callback, timestamp, headers)` (`NOW` for the
  timestamp, `ANY_PARTITION` for the partitioner's choice): with keywords each call costs about
  a microsecond more, as they go through a dict (1.65 against 0.63 us here), and a one-task
  instance writes 26 records. `tests/integration/test_produce_order.py` holds the order to a
  real broker.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient

from partita.errors import ConfigError
from partita.log.security import KafkaAccess
from partita.protocol.codec import PRODUCER_MAX_BYTES

NOW = 0
"""`Producer.produce`'s timestamp for "when it is produced" (its default)."""
ANY_PARTITION = -1
"""`Producer.produce`'s partition for "the partitioner chooses" (its default)."""

_LOG = logging.getLogger("partita.kafka")
_T = TypeVar("_T")
_REPEAT_AFTER_S = 60.0
_NUMBERS = re.compile(r"\d+")
_SUPPRESSED = re.compile(r", \d+ identical error\(s\) suppressed")
_WAITED = re.compile(r"after \d+ms")


def _same_failure(message: str) -> str:
    """A failure's line without what changes from one retry to the next: how long the attempt
    took and librdkafka's own count of the identical lines it suppressed."""
    return _WAITED.sub("after #ms", _SUPPRESSED.sub("", message))


class RepeatFilter(logging.Filter):
    """Lets each distinct librdkafka log line through once a minute. librdkafka logs every
    failed reconnect (some 20 a second against a broker that is down); the error callback
    already says once what failed and what to check. Lines that differ only in their numbers
    (client ids, milliseconds) count as the same line."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = _NUMBERS.sub("#", _same_failure(record.getMessage()))
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < _REPEAT_AFTER_S:
                return False
            if len(self._last) > 1000:
                self._last.clear()
            self._last[key] = now
        return True


_LOG.addFilter(RepeatFilter())


CONSUMER_DEFAULTS: Mapping[str, Any] = {"fetch.queue.backoff.ms": 20}
"""Under every consumer's settings. librdkafka postpones the next fetch by this much once its
queue of fetched messages passes its thresholds; its default of 1 s leaves a consumer that
is slower than the log (replay, an engine at saturation) waiting on an empty queue for most
of each second (replay read 130k records/s with it, 320-400k with this)."""


def offset_of(message: Message) -> int:
    """The offset of a consumed or delivered message (Kafka gives every such message one)."""
    offset = message.offset()
    assert offset is not None, "consumed and delivered messages have offsets"
    return offset


def new_consumer(access: KafkaAccess, conf: Mapping[str, Any]) -> Consumer:
    """A Consumer with `conf` over `CONSUMER_DEFAULTS`, the access's settings over both, and a
    readable error callback."""
    return _build(Consumer, access, {**CONSUMER_DEFAULTS, **conf})


def new_producer(access: KafkaAccess, conf: Mapping[str, Any]) -> Producer:
    return _build(Producer, access, conf)


def new_admin(access: KafkaAccess, conf: Mapping[str, Any] | None = None) -> AdminClient:
    return _build(AdminClient, access, conf or {})


def client_settings(access: KafkaAccess, conf: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a client of `access` gets: `conf`, then the files', then the address."""
    settings: dict[str, Any] = {"logger": _LOG, **conf}
    settings.update(access.settings)
    settings["bootstrap.servers"] = access.bootstrap
    logger = settings["logger"]
    reporter_logger = logger if isinstance(logger, logging.Logger) else _LOG
    settings.setdefault("error_cb", ErrorReporter(access, reporter_logger))
    return settings


def _build(
    kind: Callable[[dict[str, Any]], _T], access: KafkaAccess, conf: Mapping[str, Any]
) -> _T:
    try:
        return kind(client_settings(access, conf))
    except KafkaException as exc:
        error = exc.args[0]
        reason = error.str() if isinstance(error, KafkaError) else str(error)
        raise ConfigError(
            f"Kafka client settings rejected: {reason} (settings from {access.where})"
        ) from None


class ErrorReporter:
    """librdkafka's error callback: logs each distinct problem once a minute with advice, and
    remembers the last one (`problem`) so a caller waiting on the cluster can fail with it."""

    def __init__(self, access: KafkaAccess, logger: logging.Logger = _LOG) -> None:
        self._access = access
        self._logger = logger
        self._lock = threading.Lock()
        self._last_logged: dict[str, float] = {}
        self.problem: str | None = None
        self.fatal = False

    def __call__(self, error: KafkaError) -> None:
        message = explain(error, self._access)
        security = is_security_error(error)
        with self._lock:
            if security or self.problem is None:
                self.problem = message
            self.fatal = self.fatal or security
            now = time.monotonic()
            key = _same_failure(message)
            last = self._last_logged.get(key)
            if last is not None and now - last < _REPEAT_AFTER_S:
                return
            self._last_logged[key] = now
        self._logger.error("%s", message) if security else self._logger.warning("%s", message)


def is_security_error(error: KafkaError) -> bool:
    """Authentication, TLS or authorization: retrying with the same settings cannot help."""
    text = error.str()
    return error.code() in (
        KafkaError._AUTHENTICATION,
        KafkaError._SSL,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError.UNSUPPORTED_SASL_MECHANISM,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ) or any(marker in text for marker in ("SSL handshake failed", "SASL authentication"))


def explain(error: KafkaError, access: KafkaAccess) -> str:
    """One line: what librdkafka reported, what it means, which setting of which file to check."""
    text = error.str()
    code = error.code()
    who = f"client of role {access.role} ({access.describe()})"
    if code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED) or (
        "SASL authentication" in text
    ):
        return (
            f"Kafka refused to authenticate the {who}: {text}. Check the user name and password"
            " (sasl.jaas.config, or sasl.username and sasl.password) and sasl.mechanism in"
            f" {access.where}; the user must exist on the cluster for that mechanism."
        )
    if code == KafkaError.UNSUPPORTED_SASL_MECHANISM:
        return (
            f"The broker does not offer sasl.mechanism={access.mechanism} to the {who}: {text}."
            f" Set a mechanism its listener enables in {access.where}."
        )
    if "certificate verify failed" in text or "could not be verified" in text:
        return (
            f"The {who} does not trust the broker's TLS certificate: {text}. Point"
            " ssl.truststore.location (a PEM file, ssl.truststore.type=PEM) or ssl.ca.location"
            f" in {access.where} at the CA that signed the broker's certificate."
        )
    if "alert bad certificate" in text or "certificate required" in text:
        return (
            f"The broker refused the TLS client certificate of the {who}: {text}. The listener"
            " at this address requires one signed by its CA: check ssl.keystore.location (and"
            f" ssl.keystore.type, ssl.keystore.password) in {access.where}."
        )
    if code == KafkaError._SSL or "SSL handshake failed" in text:
        return (
            f"TLS handshake with Kafka failed for the {who}: {text}. Check that"
            f" security.protocol ({access.protocol}) is what the listener at {access.bootstrap}"
            f" expects and the certificate settings in {access.where}."
        )
    if code in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ):
        principal = f"User:{access.username}" if access.username else "its principal"
        return (
            f"Kafka denied the {who}: {text}. `partita acls --role {access.role} --principal"
            f" {principal}` prints the ACLs this role needs."
        )
    if "Disconnected while requesting ApiVersion" in text or "Disconnected (after 0ms" in text:
        return (
            f"Kafka at {access.bootstrap} closed the connection of the {who} during the"
            f" handshake: {text}. The listener probably expects another security.protocol than"
            f" {access.protocol} (set it in {access.where})."
        )
    if code in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE):
        return (
            f"Cannot reach Kafka at {access.bootstrap} (a client of role {access.role}):"
            f" {text}. Check the address (KAFKA_BOOTSTRAP_SERVERS or bootstrap.servers)"
            " and that the broker runs."
        )
    return f"Kafka error for the {who}: {text}"


def engine_group(namespace: str) -> str:
    return f"{namespace}.engine"


def transactional_id(namespace: str, partition: int) -> str:
    return f"{namespace}.engine.{partition}"


def group_consumer(access: KafkaAccess, namespace: str, **overrides: Any) -> Consumer:
    conf: dict[str, Any] = {
        "group.id": engine_group(namespace),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": 6000,  # the broker minimum: a crashed worker is replaced fast
        "heartbeat.interval.ms": 1000,
        "max.poll.interval.ms": 300000,
        "fetch.wait.max.ms": 10,
    }
    conf.update(overrides)
    return new_consumer(access, conf)


def restore_consumer(access: KafkaAccess, namespace: str, partition: int) -> Consumer:
    """An assign-only consumer that reads one partition's events during replay (also standbys,
    verify-replay and snapshot restore). `auto.offset.reset=error`: a position the log no
    longer holds is an error, never a silent jump to wherever the log now starts or ends."""
    return new_consumer(
        access,
        {
            "group.id": f"{namespace}.restore.{partition}",  # never joins or commits
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
            "fetch.wait.max.ms": 10,
        },
    )


def transactional_producer(access: KafkaAccess, namespace: str, partition: int) -> Producer:
    return new_producer(
        access,
        {
            "transactional.id": transactional_id(namespace, partition),
            "transaction.timeout.ms": 30000,
            "linger.ms": 1,
            # back-to-back transactions (confluent-kafka-python #967): offsets sent while the
            # last commit's markers are written meet CONCURRENT_TRANSACTIONS; retried after
            # 2 ms, doubling up to 20 ms (librdkafka's default: 100 ms doubling up to 1 s)
            "retry.backoff.ms": 2,
            "retry.backoff.max.ms": 20,
            "message.max.bytes": PRODUCER_MAX_BYTES,
        },
    )


@contextlib.contextmanager
def fatal_errors() -> Iterator[None]:
    """Around producer calls that serve callbacks (flush, poll and the transactional calls):
    a fatal error (e.g. the producer was fenced) comes out as the KafkaException it is.
    confluent-kafka (2.16) raises one by leaving the exception pending, and may then call a
    delivery callback in the same serve; Python reports that call as a SystemError caused by
    the KafkaException, which no `except KafkaException` catches."""
    try:
        yield
    except SystemError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KafkaException):
            raise cause from None
        raise


def close_consumer(consumer: Consumer) -> None:
    """Leave the group. A close that fails (its coordinator is away, or it timed out) is
    logged, never raised: a member's work is committed (in its transactions, or by the commit
    before the close), and the group reassigns its partitions after the session timeout.
    Raised, it would hide the error the member is leaving for and skip the rest of its
    clean-up. confluent-kafka raises it as a bare KafkaError, which is no BaseException
    subclass: `except Exception` lets it through."""
    try:
        consumer.close()
    except (KafkaException, KafkaError) as exc:  # type: ignore[misc]  # see above
        error = exc if isinstance(exc, KafkaError) else exc.args[0]
        _LOG.warning(
            "consumer close: %s; the group reassigns this member's partitions after its"
            " session timeout",
            error.str(),
        )


def consume_available(consumer: Consumer, max_messages: int, timeout: float) -> list[Message]:
    """Up to `max_messages` messages: whatever is already fetched, else wait up to `timeout`
    for the first one and take what arrived with it. (`Consumer.consume` waits for the whole
    batch or the whole timeout, which adds its timeout to every hop under light load.)"""
    messages: list[Message] = consumer.consume(num_messages=max_messages, timeout=0)
    if messages or timeout <= 0:
        return messages
    first = consumer.poll(timeout)
    if first is None:
        return []
    return [first, *consumer.consume(num_messages=max_messages - 1, timeout=0)]
