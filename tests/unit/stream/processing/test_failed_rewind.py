"""A batch whose transaction aborts must be read again: the consumer is rewound to what is
committed. When Kafka refuses the rewind (a rebalance outdated the partition's fetch position:
"Local: Outdated"), the consumer would go on after the aborted batch and skip its commands, so
the task must not go on: the transaction raises TaskFencedError and the worker joins the group
again, reopening the partition from what committed. (A CI run saw the seek's KafkaException
escape instead, and end the worker.)"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from partita.processing import ProcessingOutput
from partita.stream.errors import AbortedBatchError, TaskFencedError
from partita.stream.processing.transaction import BatchTransaction
from tests.support.memory import QuietProducer, batch_transaction


class _AbortingProducer(QuietProducer):
    """A transactional producer whose commit fails with an abortable error."""

    def commit_transaction(self, _timeout: float) -> None:
        raise KafkaException(
            KafkaError(KafkaError._STATE, "the coordinator aborted it", txn_requires_abort=True)
        )


def _transaction(rewind: Any) -> tuple[BatchTransaction, _AbortingProducer, list[str]]:
    producer = _AbortingProducer()
    forgotten: list[str] = []
    transaction = batch_transaction(producer, lambda: forgotten.append("state"), rewind)
    return transaction, producer, forgotten


def _commit(transaction: BatchTransaction) -> None:
    transaction.commit(ProcessingOutput(), [TopicPartition("t.log", 3, 42)])


def test_an_aborted_batch_is_rewound_and_raises_aborted_batch() -> None:
    rewinds: list[int] = []
    transaction, producer, forgotten = _transaction(lambda: rewinds.append(1))
    with pytest.raises(AbortedBatchError):
        _commit(transaction)
    assert (producer.aborted, rewinds, forgotten) == (1, [1], ["state"])


def test_a_rewind_kafka_refuses_fences_the_task_instead_of_escaping() -> None:
    def refused_seek() -> None:
        raise KafkaException(
            KafkaError(KafkaError._OUTDATED, "Failed to seek to offset 419: Local: Outdated")
        )

    transaction, producer, forgotten = _transaction(refused_seek)
    with pytest.raises(TaskFencedError) as raised:
        _commit(transaction)
    assert producer.aborted == 1, "the transaction is aborted before the rewind"
    assert forgotten == ["state"], "the batch's state is dropped"
    assert str(raised.value) == (
        "partition 3: cannot rewind after aborting the batch:"
        " Failed to seek to offset 419: Local: Outdated"
    )
