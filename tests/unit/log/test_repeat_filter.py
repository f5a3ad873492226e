"""librdkafka's log lines reach the user once a minute per distinct line, not once per retry."""

from __future__ import annotations

import logging
import socket
import time

from partita.config import KafkaRole
from partita.log.clients import RepeatFilter, new_consumer
from partita.log.security import KafkaAccess


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("partita.kafka", logging.ERROR, __file__, 1, message, None, None)


def test_a_line_repeated_within_a_minute_is_dropped_and_let_through_after() -> None:
    now = [100.0]
    repeat = RepeatFilter(clock=lambda: now[0])
    line = (
        "FAIL [rdkafka#consumer-2] Connect failed: Connection refused (after 0ms in state CONNECT)"
    )
    assert repeat.filter(_record(line))
    now[0] += 1.0
    assert not repeat.filter(
        _record(line.replace("consumer-2", "consumer-7").replace("0ms", "3ms"))
    )
    suppressed = line.replace("(after 0ms", "(after 7ms").replace(
        ")", ", 1 identical error(s) suppressed)"
    )
    assert not repeat.filter(_record(suppressed))  # librdkafka's own count is no new line
    assert repeat.filter(_record("FAIL [rdkafka#consumer-2] SSL handshake failed"))
    now[0] += 60.0
    assert repeat.filter(_record(line))


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_client_of_a_broker_that_is_down_logs_its_failure_once() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    collect = _Collect()
    kafka_log = logging.getLogger("partita.kafka")
    kafka_log.addHandler(collect)
    access = KafkaAccess(f"127.0.0.1:{port}", KafkaRole.CLIENT)
    settings = {"group.id": "repeat", "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 20}
    consumer = new_consumer(access, settings)
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            consumer.poll(0.1)
    finally:
        consumer.close()
        kafka_log.removeHandler(collect)
    failures = [line for line in collect.lines if "Connection refused" in line]
    assert failures, collect.lines  # the failure is reported ...
    assert len(failures) <= 3, failures  # ... once per distinct line, not once per retry
