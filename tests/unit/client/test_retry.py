"""The clients send a command again while it is rejected RESOURCE_EXHAUSTED, with back-off and
jitter, up to `retry_for`; then they raise ResourceExhaustedError. No Kafka: the connection is
a fake that answers each send from a script."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from partita.client import aio
from partita.client import client as client_module
from partita.client.commands import Request
from partita.client.errors import NotFoundError, ResourceExhaustedError, rejection_error
from partita.client.retry import RetryPolicy, is_backpressure
from partita.config import Config
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.intents import JobIntent, ProcessInstanceCreationIntent
from partita.protocol.records import Record
from partita.protocol.values import JobValue, ProcessInstanceCreationValue

FAST = RetryPolicy(retry_for=5.0, first_delay=0.001, max_delay=0.002)


def rejected(rejection_type: RejectionType) -> Record:
    return Record(
        RecordType.COMMAND_REJECTION,
        ValueType.PROCESS_INSTANCE_CREATION,
        ProcessInstanceCreationIntent.CREATE,
        ProcessInstanceCreationValue(bpmn_process_id="order"),
        rejection_type=rejection_type,
        rejection_reason="partition 0 has 12,345 commands waiting on t.commands, over the limit"
        " of 10,000 (PARTITA_BACKPRESSURE_LAG)",
    )


CREATED = Record(
    RecordType.EVENT,
    ValueType.PROCESS_INSTANCE_CREATION,
    ProcessInstanceCreationIntent.CREATED,
    ProcessInstanceCreationValue(bpmn_process_id="order", process_instance_key=7),
    key=7,
)
BUSY = rejected(RejectionType.RESOURCE_EXHAUSTED)


class ScriptedConnection:
    """Answers the n-th send with the n-th scripted reply (the last one repeats)."""

    def __init__(self, config: Config, timeout: float, script: list[Record]) -> None:
        self.config = config
        self.script = script
        self.sent: list[Request] = []
        self.producer = self
        self.codec = None
        self.partition_count = 1
        self._ready: list[tuple[bytes, Record]] = []

    def produce(self, request: Request, *, reply: bool = True, **_: Any) -> bytes:
        self.sent.append(request)
        correlation = str(len(self.sent)).encode()
        self._ready.append((correlation, self.script[min(len(self.sent), len(self.script)) - 1]))
        return correlation

    def replies(self, timeout: float) -> list[tuple[bytes, Record]]:
        ready, self._ready = self._ready, []
        if not ready:
            time.sleep(0.001)  # the asyncio client's reply thread polls in a loop
        return ready

    def flush(self, timeout: float = 0) -> int:
        return 0

    def poll(self, timeout: float = 0) -> int:
        return 0

    def close(self) -> None:
        pass


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Record]]:
    """The replies the sync client's fake connection gives, in order."""
    script: list[Record] = []
    monkeypatch.setattr(
        client_module,
        "Connection",
        lambda config, timeout, **_: ScriptedConnection(config, timeout, script),
    )
    yield script


def sync_client(policy: RetryPolicy = FAST) -> client_module.Client:
    client = client_module.Client(Config(), timeout=1.0)
    client.retry = policy
    return client


# -- the policy -------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_delays_grow_exponentially_with_jitter_up_to_the_maximum() -> None:
    policy = RetryPolicy(retry_for=1000, first_delay=0.1, max_delay=1.0, multiplier=2.0)
    low = policy.start(FakeClock(), rng=lambda: 0.0)
    high = policy.start(FakeClock(), rng=lambda: 1.0)
    lows = [low.next_delay() for _ in range(6)]
    highs = [high.next_delay() for _ in range(6)]
    assert highs == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    assert lows == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.5, 0.5])  # jitter: at least half
    assert low.attempts == 7  # the first send and six more


def test_no_wait_ends_after_retry_for_and_then_it_gives_up() -> None:
    clock = FakeClock()
    backoff = RetryPolicy(retry_for=1.0, first_delay=0.4, max_delay=10).start(clock, lambda: 1.0)
    waits = []
    while (delay := backoff.next_delay()) is not None:
        waits.append(delay)
        clock.now += delay
    assert waits == pytest.approx([0.4, 0.6])  # the second is cut to what is left of 1 s
    assert backoff.waited == pytest.approx(1.0)
    assert backoff.attempts == 3


def test_retry_for_zero_never_retries() -> None:
    assert RetryPolicy(retry_for=0).start(FakeClock()).next_delay() is None


def test_thousands_of_retries_do_not_overflow() -> None:
    backoff = RetryPolicy(retry_for=1e9, first_delay=1, max_delay=60).start(FakeClock())
    assert all(0.5 <= (backoff.next_delay() or 0) <= 60 for _ in range(5000))


@pytest.mark.parametrize(
    "fields",
    [
        {"retry_for": -1},
        {"first_delay": 0},
        {"first_delay": 3, "max_delay": 2},
        {"multiplier": 0.5},
    ],
)
def test_nonsense_policies_are_refused(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**fields)


def test_only_resource_exhausted_rejections_are_backpressure() -> None:
    assert is_backpressure(BUSY)
    assert not is_backpressure(rejected(RejectionType.INVALID_STATE))
    assert not is_backpressure(CREATED)


def test_the_error_of_a_resource_exhausted_rejection_says_how_often_it_was_sent() -> None:
    assert type(rejection_error(BUSY)) is ResourceExhaustedError
    error = ResourceExhaustedError(BUSY, attempts=4, waited=2.25)
    assert (error.attempts, error.waited, error.rejection_type) == (
        4,
        2.25,
        RejectionType.RESOURCE_EXHAUSTED,
    )
    assert "PARTITA_BACKPRESSURE_LAG" in str(error) and "sent 4 times over 2.2 s" in str(error)


# -- the synchronous client -------------------------------------------------------------------


def test_the_client_sends_again_until_the_partition_accepts(scripted: list[Record]) -> None:
    scripted += [BUSY, BUSY, CREATED]
    client = sync_client()
    assert client.create_instance("order") == CREATED
    assert len(client.connection.sent) == 3  # type: ignore[attr-defined]
    assert {r.intent for r in client.connection.sent} == {  # type: ignore[attr-defined]
        ProcessInstanceCreationIntent.CREATE
    }


def test_the_client_raises_resource_exhausted_after_retry_for(scripted: list[Record]) -> None:
    scripted.append(BUSY)
    client = sync_client(RetryPolicy(retry_for=0.05, first_delay=0.01, max_delay=0.01))
    with pytest.raises(ResourceExhaustedError) as raised:
        client.create_instance("order")
    assert raised.value.attempts == len(client.connection.sent) > 2  # type: ignore[attr-defined]
    assert raised.value.waited >= 0.05


def test_with_retry_for_zero_the_first_rejection_is_raised(scripted: list[Record]) -> None:
    scripted.append(BUSY)
    client = client_module.Client(Config(), timeout=1.0, retry_for=0)
    with pytest.raises(ResourceExhaustedError) as raised:
        client.create_instance("order")
    assert raised.value.attempts == 1


def test_other_rejections_are_raised_at_once(scripted: list[Record]) -> None:
    scripted += [rejected(RejectionType.NOT_FOUND), CREATED]
    client = sync_client()
    with pytest.raises(NotFoundError):
        client.create_instance("order")
    assert len(client.connection.sent) == 1  # type: ignore[attr-defined]


def test_pipelined_results_are_returned_as_they_came(scripted: list[Record]) -> None:
    scripted.append(BUSY)
    client = sync_client()
    correlation = client.submit(JobIntent.COMPLETE, JobValue(), key=5)
    assert client.result(correlation) == BUSY


# -- the asyncio client -----------------------------------------------------------------------


def async_run(script: list[Record], policy: RetryPolicy = FAST) -> tuple[Any, int]:
    """Create an instance with the asyncio client; (its result or exception, sends)."""

    async def main() -> tuple[Any, int]:
        connection = ScriptedConnection(Config(), 1.0, script)
        client = aio.AsyncClient(connection, timeout=1.0)  # type: ignore[arg-type]
        client.retry = policy
        try:
            outcome: Any = await client.create_instance("order")
        except Exception as error:  # the outcome under test
            outcome = error
        finally:
            await client.close()
        return outcome, len(connection.sent)

    return asyncio.run(main())


def test_the_async_client_sends_again_until_the_partition_accepts() -> None:
    assert async_run([BUSY, BUSY, BUSY, CREATED]) == (CREATED, 4)


def test_the_async_client_raises_resource_exhausted_after_retry_for() -> None:
    outcome, sent = async_run([BUSY], RetryPolicy(retry_for=0.05, first_delay=0.01, max_delay=0.01))
    assert isinstance(outcome, ResourceExhaustedError) and outcome.attempts == sent > 2


def test_the_async_client_raises_other_rejections_at_once() -> None:
    outcome, sent = async_run([rejected(RejectionType.INVALID_STATE), CREATED])
    assert type(outcome).__name__ == "InvalidStateError" and sent == 1
