"""confluent-kafka (2.16) raises a fatal producer error (this producer was fenced) from inside
a serve of callbacks by leaving the KafkaException pending; when the same serve then calls one
of our delivery callbacks, Python reports that call as a SystemError caused by the pending
KafkaException. A CI run saw it end a worker whose partitions had moved while it was frozen
(`test_worker_failover`), instead of the worker treating its task as fenced and joining again.
The transaction must see the fatal error as what it is."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from partita.log.clients import fatal_errors
from partita.processing import ProcessingOutput
from partita.stream.errors import TaskFencedError
from tests.support.memory import QuietProducer, batch_transaction

_FENCED = "Failed to add partitions to transaction: Local: This instance has been fenced"


def _masked_fatal_error() -> SystemError:
    """What the delivery callback's call raises, built the way CPython builds it."""
    fatal = KafkaException(KafkaError(KafkaError._FENCED, _FENCED, fatal=True))
    try:
        try:
            raise fatal
        except KafkaException as pending:
            raise SystemError("<function on_both> returned a result with an exception set") from (
                pending
            )
    except SystemError as masked:
        return masked


class _FencedWhileServing(QuietProducer):
    """A transactional producer that commits, then meets the fatal error when it serves the
    batch's delivery reports."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__()
        self.raised = raised

    def poll(self, _timeout: float) -> int:
        raise self.raised


def _commit(producer: _FencedWhileServing) -> list[str]:
    forgotten: list[str] = []
    transaction = batch_transaction(producer, lambda: forgotten.append("state"), lambda: None)
    transaction.commit(ProcessingOutput(), [TopicPartition("t.log", 3, 42)])
    return forgotten


def test_a_fatal_error_masked_as_system_error_fences_the_task() -> None:
    producer = _FencedWhileServing(_masked_fatal_error())
    with pytest.raises(TaskFencedError) as raised:
        _commit(producer)
    assert str(raised.value) == f"partition 3: {_FENCED}"
    assert producer.aborted == 0, "a fenced producer cannot abort; the next owner does"


def test_a_system_error_of_another_cause_is_not_hidden() -> None:
    producer = _FencedWhileServing(SystemError("a bug of ours"))
    with pytest.raises(SystemError, match="a bug of ours"):
        _commit(producer)


def test_fatal_errors_passes_everything_else_through() -> None:
    with pytest.raises(KeyError), fatal_errors():
        raise KeyError("x")
    with fatal_errors():
        pass
