"""A wait for a cluster that does not answer says so while it waits, then fails naming the
address; a refused login fails at once."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from partita.config import KafkaRole
from partita.log import admin
from partita.log.admin import KafkaAccessError, KafkaUnavailableError, cluster_metadata
from partita.log.clients import ErrorReporter
from partita.log.security import KafkaAccess

# a port nothing listens on: the probe of open ports at the deadline finds it closed
_ACCESS = KafkaAccess("127.0.0.1:1", KafkaRole.OPERATOR)


class _Unanswered:
    """A client handle whose metadata requests fail as librdkafka's do with no broker."""

    def __init__(self, error: KafkaError) -> None:
        self.error = error
        self.requests = 0

    def list_topics(self, timeout: float) -> object:
        self.requests += 1
        time.sleep(min(timeout, 0.02))  # librdkafka waits up to `timeout` for an answer
        raise KafkaException(self.error)

    def poll(self, timeout: float) -> None:
        return None


def _wait(
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    error: KafkaError,
    *,
    every: float,
    timeout: float,
) -> tuple[list[str], Exception, int]:
    """Wait on a handle that fails every request with `error`, saying it goes on every
    `every` s: the progress lines logged, the exception raised, the requests made."""
    monkeypatch.setattr(admin, "PROGRESS_EVERY_S", every)
    handle = _Unanswered(error)
    with (
        caplog.at_level(logging.WARNING, logger="partita.kafka.wait"),
        pytest.raises((KafkaUnavailableError, KafkaAccessError)) as raised,
    ):
        cluster_metadata(handle, ErrorReporter(_ACCESS), _ACCESS, timeout)  # type: ignore[arg-type]
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "partita.kafka.wait" and "no answer from Kafka" in r.getMessage()
    ]
    return lines, raised.value, handle.requests


def test_a_long_wait_says_it_goes_on_then_names_the_address(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreachable = KafkaError(KafkaError._TRANSPORT)
    lines, raised, _ = _wait(caplog, monkeypatch, unreachable, every=0.5, timeout=2.0)
    assert type(raised) is KafkaUnavailableError
    assert 2 <= len(lines) <= 3, lines
    assert lines[0].startswith("no answer from Kafka at 127.0.0.1:1 yet (")
    assert "of 2 s); still trying, Ctrl-C to stop" in lines[0]
    assert "did not answer metadata requests within 2 s" in str(raised)
    assert "`partita kafka up`" in str(raised)


def test_a_short_wait_prints_no_progress(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreachable = KafkaError(KafkaError._TRANSPORT)
    lines, raised, _ = _wait(caplog, monkeypatch, unreachable, every=5.0, timeout=0.4)
    assert type(raised) is KafkaUnavailableError
    assert lines == []


def test_a_refused_login_fails_at_once_without_progress(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED)
    lines, raised, requests = _wait(caplog, monkeypatch, refused, every=0.01, timeout=30.0)
    assert type(raised) is KafkaAccessError
    assert requests == 1
    assert lines == []
