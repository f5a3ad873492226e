"""A batch's client commands are processed at the log positions their copies are predicted to
land at, once the last batches' copies landed where predicted: past the last record the
partition's producer committed and that transaction's commit marker. Nothing is written at the
batch's start; the copies go first at the commit, and where they landed is checked before it
commits. A copy that landed elsewhere (another producer wrote to the partition first) aborts
the batch, which is then processed again at settled positions, and each such miss doubles how
many batches must land as predicted before the next prediction.

The producer here keeps offsets as a partition does: every record takes one, aborted ones
too, and every transaction that wrote to a partition leaves a marker there."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from partita.processing import Engine, ProcessingContext, ProcessingOutput
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import record_headers
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from partita.protocol.records import Record, command, event
from partita.protocol.values import ProcessInstanceCreationValue
from partita.state import KeyGenerator, PartitionDb
from partita.state.db import LAST_PROCESSED_POSITION
from partita.stream.errors import AbortedBatchError
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing.admission import Copy
from partita.stream.processing.replies import ReplyRoutes
from partita.stream.processing.state_machine import ProcessingStateMachine
from partita.stream.processing.transaction import BatchTransaction
from tests.support.memory import Message, Produced, ProducerDouble

TOPIC, PARTITION = "t.log", 0
CODEC = RecordCodec()


class _Message:
    def __init__(self, partition: int, offset: int) -> None:
        self._partition, self._offset = partition, offset

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset


class _PartitionedProducer(ProducerDouble):
    """A transactional producer over partitions that number their records as Kafka does."""

    def __init__(self) -> None:
        self.ends: defaultdict[int, int] = defaultdict(int)
        self.calls: list[str] = []
        self._pending: list[tuple[int, Any]] = []
        self._delivered: list[tuple[Any, _Message]] = []
        self._touched: set[int] = set()
        self.sent_offsets: list[dict[str, int]] = []
        """The offsets each transaction sent to the group, by topic."""
        self.reports: list[bool] = []
        """Per record produced: whether it asked for a delivery report."""
        self.foreign_after: int | None = None
        """Another producer's record lands after this many of the next flush's records."""

    def write_elsewhere(self, partition: int, records: int = 1) -> None:
        """Another producer's committed transaction on `partition`: its records and marker."""
        self.ends[partition] += records + 1

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def queue(self, produced: Produced) -> None:
        self.calls.append("produce")
        self._pending.append((produced.partition, produced.on_delivery))
        self.reports.append(produced.on_delivery is not None)

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], *_: Any) -> None:
        self.calls.append("offsets")
        self.sent_offsets.append({tp.topic: tp.offset for tp in offsets})

    def flush(self, _timeout: float = 0) -> int:
        for index, (partition, callback) in enumerate(self._pending):
            if index == self.foreign_after:
                self.ends[partition] += 1
                self.foreign_after = None
            message = _Message(partition, self.ends[partition])
            self.ends[partition] += 1
            self._touched.add(partition)
            if callback is not None:
                self._delivered.append((callback, message))
        self._pending = []
        self.poll(0)
        return 0

    def poll(self, _timeout: float) -> int:
        for callback, message in self._delivered:
            callback(None, message)
        self._delivered = []
        return 0

    def _end(self) -> None:
        self.flush()
        for partition in self._touched:
            self.ends[partition] += 1  # the marker
        self._touched = set()

    def commit_transaction(self, _timeout: float) -> None:
        self.calls.append("commit")
        self._end()

    def abort_transaction(self, _timeout: float) -> None:
        self.calls.append("abort")
        self._end()


class _Batches:
    def __init__(self) -> None:
        self.producer = _PartitionedProducer()
        self.metrics = ProcessingMetrics()
        self.forgotten = 0
        self.rewound = 0
        self.transaction = BatchTransaction(
            self.producer,  # type: ignore[arg-type]
            TOPIC,
            PARTITION,
            CODEC,
            ReplyRoutes(frozenset()),
            lambda: None,
            self._forget,
            self._rewind,
            self.metrics,
        )

    def _forget(self) -> None:
        self.forgotten += 1

    def _rewind(self) -> None:
        self.rewound += 1

    def run(self, copies: int = 1, events: int = 2) -> tuple[list[int] | None, list[int]]:
        """One batch of `copies` client commands, each followed by `events` events: the
        predicted positions (None: settled) and the positions its events name."""
        record = command(Creation.CREATE, ProcessInstanceCreationValue(bpmn_process_id="p"))
        sent = [
            Copy(record, CODEC.encode(record), list(record_headers(record)), None)
            for _ in range(copies)
        ]
        predicted = self.transaction.send_copies(sent)
        output = ProcessingOutput()
        positions = self.transaction.copy_positions() if predicted is None else predicted
        created = event(Creation.CREATED, ProcessInstanceCreationValue(bpmn_process_id="p"), 1)
        for position in positions:
            for _ in range(events):
                output.records.append((PARTITION, created.with_position(position)))
        self.transaction.commit(output, [TopicPartition(TOPIC, PARTITION, 1)])
        return predicted, positions


def test_copies_get_predicted_positions_once_a_batch_landed_where_expected() -> None:
    batches = _Batches()
    assert batches.run() == (None, [0])  # copy 0, events 1-2, marker 3: nothing known before
    assert batches.transaction.landing.next_position == 4
    assert batches.run() == (None, [4])  # settled, and landed at the expected 4
    assert batches.metrics.predicted == 0

    batches.producer.calls.clear()
    predicted = batches.transaction.send_copies(
        [Copy(_creation(), CODEC.encode(_creation()), [], None)] * 2
    )
    assert predicted == [8, 9]
    assert batches.producer.calls == []  # nothing written at the batch's start
    output = ProcessingOutput(records=[(PARTITION, _created().with_position(8))])
    batches.transaction.commit(output, [TopicPartition(TOPIC, PARTITION, 1)])
    copies_then_event = ["begin", "produce", "produce", "produce"]
    assert batches.producer.calls == [*copies_then_event, "offsets", "commit"]
    assert batches.metrics.predicted == 1
    assert batches.transaction.landing.next_position == 12  # copies 8-9, event 10, marker 11
    assert batches.run() == ([12], [12])


def test_a_copy_that_lands_elsewhere_aborts_and_prediction_waits_for_twice_the_batches(
    caplog: pytest.LogCaptureFixture,
) -> None:
    batches = _Batches()
    batches.run()
    batches.run()
    assert batches.run() == ([8], [8])
    batches.producer.write_elsewhere(PARTITION)  # offset 12 and its marker 13
    with (
        caplog.at_level(logging.INFO, logger="partita.processing"),
        pytest.raises(AbortedBatchError),
    ):
        batches.run()
    assert "abort" in batches.producer.calls
    assert (batches.forgotten, batches.rewound) == (1, 1)
    assert (batches.metrics.mispredicted, batches.metrics.aborted) == (1, 1)
    (logged,) = [r for r in caplog.records if "aborting batch" in r.getMessage()]
    assert logged.levelno == logging.INFO
    assert logged.getMessage() == (
        "partition 0: aborting batch: its copies landed at 14, not at the predicted 12"
        " (another producer wrote to the partition first): processing it again"
    )
    assert batches.transaction.landing.next_position is None

    # the batch again, settled: its copy at 18, past the aborted 14-16 and their marker
    assert batches.run() == (None, [18])
    assert batches.run() == (None, [22])  # landed as expected once: not yet trusted
    assert batches.run() == (None, [26])  # twice
    assert batches.run() == ([30], [30])
    assert batches.metrics.predicted == 2


def test_only_the_first_and_last_predicted_copy_report_and_a_record_among_them_aborts() -> None:
    batches = _Batches()
    batches.run()
    batches.run()
    batches.producer.reports.clear()
    assert batches.run(copies=5, events=0) == ([8, 9, 10, 11, 12], [8, 9, 10, 11, 12])
    assert batches.producer.reports == [True, False, False, False, True]
    assert batches.transaction.landing.next_position == 14  # copies 8-12, marker 13
    assert batches.transaction.landing.written == (8, 12)

    batches.producer.foreign_after = 2  # lands between the second and third copy
    with pytest.raises(AbortedBatchError):
        batches.run(copies=5, events=0)
    assert (batches.metrics.mispredicted, batches.forgotten) == (1, 1)


def test_a_batch_that_writes_nothing_to_its_partition_keeps_the_prediction() -> None:
    batches = _Batches()
    batches.run()
    batches.run()
    batches.transaction.commit(ProcessingOutput(), [TopicPartition(TOPIC, PARTITION, 1)])
    assert batches.transaction.landing.next_position == 8  # offsets only: no marker
    assert batches.run() == ([8], [8])


def _creation() -> Record:
    return command(Creation.CREATE, ProcessInstanceCreationValue(bpmn_process_id="p"))


def _created() -> Record:
    return event(Creation.CREATED, ProcessInstanceCreationValue(bpmn_process_id="p"), 1)


# -- the ranges only a batch's own records hold (`Landing.written`) ------------------


def test_a_committed_batch_names_the_offsets_only_its_own_records_hold() -> None:
    batches = _Batches()
    batches.run(copies=2, events=2)  # copies 0-1, events 2-5, marker 6
    assert batches.transaction.landing.written == (0, 5)
    batches.run(copies=1, events=3)  # settled again: copy 7, events 8-10
    assert batches.transaction.landing.written == (7, 10)
    batches.run()  # predicted now: copy 12, events 13-14
    assert batches.transaction.landing.written == (12, 14)


def test_no_range_when_another_producer_wrote_among_the_batch_or_it_left_a_command() -> None:
    batches = _Batches()
    copy = Copy(_creation(), CODEC.encode(_creation()), [], None)
    assert batches.transaction.send_copies([copy]) is None
    assert batches.transaction.copy_positions() == [0]
    batches.producer.write_elsewhere(PARTITION)  # 1 and its marker 2, before the events
    output = ProcessingOutput(records=[(PARTITION, _created().with_position(0))])
    batches.transaction.commit(output, [TopicPartition(TOPIC, PARTITION, 1)])
    assert batches.transaction.landing.written is None  # event at 3: offsets 1-2 are not its own

    batches.transaction.send_copies([copy])
    batches.transaction.copy_positions()
    spilled = command(Creation.CREATE, ProcessInstanceCreationValue(bpmn_process_id="q"))
    output = ProcessingOutput(records=[(PARTITION, _created()), (PARTITION, spilled)])
    batches.transaction.commit(output, [TopicPartition(TOPIC, PARTITION, 1)])
    assert batches.transaction.landing.written is None  # the command must be processed when read

    batches.run()
    assert batches.transaction.landing.written is not None
    batches.transaction.commit(ProcessingOutput(), [TopicPartition(TOPIC, PARTITION, 1)])
    assert batches.transaction.landing.written is None  # offsets only: nothing written to name


class _ReadBack:
    """One of the batch's own records read back from the log: its headers must not be needed."""

    def __init__(self, offset: int) -> None:
        self._offset = offset

    def offset(self) -> int:
        return self._offset

    def headers(self) -> Any:
        raise AssertionError(f"the headers of own record {self._offset} were read")


def test_own_records_read_back_are_passed_over_and_a_foreign_command_among_them_is_not(
    tmp_path: Path,
) -> None:
    producer = _PartitionedProducer()
    machine = _machine(tmp_path, producer, moves=None)  # the consumer is never moved here
    ingress = [
        Message("t.commands", PARTITION, n, CODEC.encode(_creation()), record_headers(_creation()))
        for n in range(2)
    ]
    assert machine.process((), ingress=ingress) == 2  # copies 0-1, events 2-3, marker 4
    producer.write_elsewhere(PARTITION)  # another partition's command at 5, marker 6
    foreign = Message(TOPIC, PARTITION, 5, CODEC.encode(_creation()), record_headers(_creation()))

    assert machine.process([*(_ReadBack(offset) for offset in range(4)), foreign]) == 1
    assert machine.next_offset == 6
    assert machine.transaction.landing.written is None  # no copies led the batch: its start unknown
    machine.db.close()


# -- own records the log consumer is moved past (`ProcessingStateMachine._skip_own`) ----------


def _machine(
    tmp_path: Path, producer: _PartitionedProducer, moves: list[int] | None
) -> ProcessingStateMachine:
    """A one-partition machine whose processor answers a creation with one event, over
    `producer`; the offsets it moves the log consumer to go to `moves` (None: not moved)."""
    engine = Engine()

    def create(record: Record, ctx: ProcessingContext) -> None:
        ctx.append_event(Creation.CREATED, record.value, ctx.keys.next_key())

    engine.processor(Creation.CREATE, create)
    db = PartitionDb(tmp_path / "state")
    return ProcessingStateMachine(
        topic=TOPIC,
        partition=PARTITION,
        partition_count=1,
        engine=engine,
        codec=CODEC,
        db=db,
        keys=KeyGenerator(db, PARTITION + 1),
        producer=producer,  # type: ignore[arg-type]
        group_metadata=lambda: None,
        rewind=lambda *_: None,
        next_offset=0,
        ingress_topic="t.commands",
        next_ingress_offset=0,
        skip_log=None if moves is None else moves.append,
    )


def _ingress(offset: int) -> list[Message]:
    value, headers = CODEC.encode(_creation()), record_headers(_creation())
    return [Message("t.commands", PARTITION, offset, value, headers)]


def test_the_log_consumer_is_moved_past_own_records_once_all_before_them_is_processed(
    tmp_path: Path,
) -> None:
    producer, moves = _PartitionedProducer(), []
    machine = _machine(tmp_path, producer, moves)
    machine.process((), ingress=_ingress(0))  # copy 0, event 1, marker 2: where it ends is new
    assert moves == []
    machine.process((), ingress=_ingress(1))  # copy 3 where expected (settled), event 4
    assert moves == [5]  # 0-4 are its own records and its marker: none of it to read back
    machine.process((), ingress=_ingress(2))  # predicted: copy 6, event 7
    machine.process((), ingress=_ingress(3))  # copy 9, event 10
    assert moves == [5, 8, 11]
    assert (machine.next_offset, machine.metrics.not_read_back) == (11, 3)
    # processed as far as the store knows too (snapshots are due by it; a restart resumes there)
    assert machine.db.position(LAST_PROCESSED_POSITION) == 10

    producer.write_elsewhere(PARTITION)  # another partition's command at 12, its marker 13
    with pytest.raises(AbortedBatchError):
        machine.process((), ingress=_ingress(4))  # predicted at 12, landed at 14: aborted
    machine.process((), ingress=_ingress(4))  # aborted 14-15 and marker 16; settled now
    assert machine.transaction.landing.written == (17, 18)
    assert moves == [5, 8, 11]  # 12 is not its own: it must be read and processed
    assert machine.next_offset == 11
    machine.db.close()


def test_the_offsets_of_own_records_moved_past_go_to_the_group_once_they_trailed(
    tmp_path: Path,
) -> None:
    producer, moves = _PartitionedProducer(), []
    machine = _machine(tmp_path, producer, moves)
    machine.process((), ingress=_ingress(0))
    machine.offset_commits.expire()  # the next batch sends its offsets with its events
    machine.process((), ingress=_ingress(1))  # copy 3, event 4, marker 5: moved past 0-5
    assert moves == [5]
    assert TOPIC not in producer.sent_offsets[-1]  # it read nothing of the log to commit
    now = time.monotonic()
    assert not machine.commit_read_only(now=now)  # not yet trailed long enough
    assert machine.commit_read_only(now=now + 1)  # idle: nothing else would commit them
    assert producer.sent_offsets[-1][TOPIC] == 5
    assert not machine.commit_read_only(now=now + 2)  # and nothing trails now
    machine.db.close()


def test_own_records_are_read_back_until_what_came_before_them_is_processed(
    tmp_path: Path,
) -> None:
    producer, moves = _PartitionedProducer(), []
    producer.write_elsewhere(PARTITION)  # a command at 0 (and a marker at 1) to process first
    machine = _machine(tmp_path, producer, moves)
    for offset in range(3):  # copies 2, 5 and 8, each followed by its event and a marker
        machine.process((), ingress=_ingress(offset))
    assert moves == []
    foreign = Message(TOPIC, PARTITION, 0, CODEC.encode(_creation()), record_headers(_creation()))
    assert machine.process([foreign]) == 1  # its event at 11, marker 12: no copy names them
    machine.process([_ReadBack(offset) for offset in (2, 3, 5, 6, 8, 9)])
    machine.process((), ingress=_ingress(3))  # copy 13, event 14
    assert moves == []  # 11 is not known to be its own until read back
    created = _created()
    readback = Message(TOPIC, PARTITION, 11, CODEC.encode(created), record_headers(created))
    machine.process([readback])
    machine.process((), ingress=_ingress(4))  # copy 16, event 17
    assert moves == [18]  # 12 a marker, 13-17 its own records and a marker
    machine.db.close()


def test_a_move_kafka_refuses_leaves_the_records_to_be_read_back_and_passed_over(
    tmp_path: Path,
) -> None:
    producer, moves = _PartitionedProducer(), []
    machine = _machine(tmp_path, producer, moves)

    def refused(_offset: int) -> None:
        raise KafkaException(KafkaError(KafkaError._STATE, "Local: Erroneous state"))

    machine.skip_log = refused
    for offset in range(3):  # copies 0, 3 and 6, each followed by its event and a marker
        machine.process((), ingress=_ingress(offset))
    assert machine.metrics.not_read_back == 0
    assert machine.next_offset == 8  # passed over by offset when read back
    assert machine.process([_ReadBack(offset) for offset in (0, 1, 3, 4, 6, 7)]) == 0
    machine.db.close()
