"""Read-only batches (`partita.stream.processing.state_machine`): a batch that reads only records
the engine skips (its own events read back) commits no transaction of its own. Its log offsets ride
on the next batch's transaction, or on one of their own once they waited READ_ONLY_COMMIT_S, or
at once when the worker stops gracefully."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from partita.processing.builtin import build_engine
from partita.protocol.headers import processed_header, processed_positions, record_headers
from partita.protocol.intents import (
    DeploymentIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
)
from partita.protocol.keys import encode_key
from partita.protocol.records import command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
)
from partita.stream.processing.state_machine import READ_ONLY_COMMIT_S
from tests.support.memory import CODEC, MemoryEngine, MemoryKafka, MemoryProducer
from tests.support.paths import BPMN_FIXTURES


class CountingProducer(MemoryProducer):
    """Every committed transaction, with the log offset it committed."""

    def __init__(self, kafka: MemoryKafka) -> None:
        super().__init__(kafka)
        self.commits: list[int | None] = []
        self._offset: int | None = None

    def send_offsets_to_transaction(self, offsets: Any, *_: Any) -> None:
        self._offset = next((tp.offset for tp in offsets if tp.topic == MemoryEngine.TOPIC), None)

    def commit_transaction(self, *args: Any) -> None:
        super().commit_transaction(*args)
        self.commits.append(self._offset)
        self._offset = None


def _engine(tmp_path: Path) -> tuple[MemoryEngine, CountingProducer]:
    harness = MemoryEngine(build_engine(), tmp_path, partitions=1)
    producer = CountingProducer(harness.kafka)
    machine = harness.machines[0]
    machine.producer = machine.transaction.producer = producer
    return harness, producer


def _step(harness: MemoryEngine) -> None:
    """One batch: everything on the log the machine has not read."""
    machine = harness.machines[0]
    machine.process(harness.kafka.log(MemoryEngine.TOPIC, 0)[machine.next_offset :])


def test_reading_back_its_own_events_commits_nothing_until_the_next_batch(
    tmp_path: Path,
) -> None:
    harness, producer = _engine(tmp_path)
    machine = harness.machines[0]
    resource = DeploymentResource("one-task.bpmn", (BPMN_FIXTURES / "one-task.bpmn").read_bytes())
    harness.send(0, command(DeploymentIntent.CREATE, DeploymentValue(resources=(resource,))))
    _step(harness)  # the deployment: its events
    assert len(producer.commits) == 1
    end = len(harness.kafka.log(MemoryEngine.TOPIC, 0))
    _step(harness)  # its events, read back: read-only
    assert len(producer.commits) == 1, "a read-only batch committed a transaction"
    assert machine.next_offset == end, "it was read all the same"
    before = harness.dbs[0].digest()
    creation = ProcessInstanceCreationValue(bpmn_process_id="one-task")
    harness.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
    _step(harness)  # a command after them: one transaction carries both batches' positions
    assert producer.commits[1:] == [None], "offsets were sent less than 100 ms ago"
    last = harness.kafka.log(MemoryEngine.TOPIC, 0)[-1]
    assert processed_positions(last.headers()) == (end, -1)  # the command at `end`, no ingress
    assert harness.dbs[0].digest() != before
    harness.assert_replay_matches(tmp_path)


def test_offsets_go_to_the_group_once_the_commit_interval_passed(tmp_path: Path) -> None:
    harness, producer = _engine(tmp_path)
    machine = harness.machines[0]
    creation = ProcessInstanceCreationValue(bpmn_process_id="none-deployed")
    harness.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
    _step(harness)  # the first transaction sends its offsets
    assert producer.commits == [1]
    harness.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
    _step(harness)  # within OFFSETS_COMMIT_S: the positions ride on the rejection
    assert producer.commits == [1, None]
    assert machine.offset_commits.behind_since is not None
    machine.offset_commits.expire()  # OFFSETS_COMMIT_S passed
    harness.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
    _step(harness)
    log = harness.kafka.log(MemoryEngine.TOPIC, 0)
    assert producer.commits == [1, None, len(log) - 1]  # up to and with the last command
    assert machine.offset_commits.behind_since is None


def test_trailing_offsets_are_committed_within_the_commit_interval(tmp_path: Path) -> None:
    harness, producer = _engine(tmp_path)
    machine = harness.machines[0]
    creation = ProcessInstanceCreationValue(bpmn_process_id="none-deployed")
    for _ in range(2):
        harness.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
        _step(harness)
    assert producer.commits == [1, None]
    behind = machine.offset_commits.behind_since
    assert behind is not None
    assert not machine.commit_read_only(now=behind + READ_ONLY_COMMIT_S / 2)
    assert machine.commit_read_only(now=behind + READ_ONLY_COMMIT_S + 0.001)
    assert producer.commits[2:] == [machine.next_offset]
    assert not machine.commit_read_only(wait=False), "nothing left to commit"


def test_read_only_offsets_wait_at_most_the_commit_interval(tmp_path: Path) -> None:
    harness, producer = _engine(tmp_path)
    machine = harness.machines[0]
    creation = ProcessInstanceCreationValue(bpmn_process_id="none-deployed")
    harness.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
    _step(harness)  # its rejection
    _step(harness)  # read back
    end = len(harness.kafka.log(MemoryEngine.TOPIC, 0))
    assert machine.next_offset == end and len(producer.commits) == 1
    started = machine._read_only_since
    assert started is not None
    assert not machine.commit_read_only(now=started + READ_ONLY_COMMIT_S / 2)
    assert len(producer.commits) == 1
    assert machine.commit_read_only(now=started + READ_ONLY_COMMIT_S + 0.001)
    assert producer.commits[1:] == [end]
    assert not machine.commit_read_only(wait=False), "nothing left to commit"
    _step(harness)  # nothing new: no batch, no transaction
    assert len(producer.commits) == 2


def test_a_graceful_stop_commits_read_only_offsets_at_once(tmp_path: Path) -> None:
    harness, producer = _engine(tmp_path)
    machine = harness.machines[0]
    creation = ProcessInstanceCreationValue(bpmn_process_id="none-deployed")
    harness.send(0, command(ProcessInstanceCreationIntent.CREATE, creation))
    _step(harness)
    _step(harness)
    assert machine.commit_read_only(wait=False)
    assert producer.commits[1:] == [len(harness.kafka.log(MemoryEngine.TOPIC, 0))]


def test_a_forwarded_command_leaves_this_partitions_positions_behind(tmp_path: Path) -> None:
    """A command on partition 0's log that belongs to partition 1 (a spilled follow-up may be
    one, and may carry partition 0's PROCESSED header) is forwarded without that header:
    partition 1 would take partition 0's positions for its own."""
    harness = MemoryEngine(build_engine(), tmp_path, partitions=2)
    cancel = command(ProcessInstanceIntent.CANCEL, ProcessInstanceValue(), key=encode_key(2, 7))
    headers = [*record_headers(cancel), processed_header(41, 17)]
    harness.kafka.append(MemoryEngine.TOPIC, 0, CODEC.encode(cancel), headers)
    harness.machines[0].process(harness.kafka.log(MemoryEngine.TOPIC, 0))
    (forwarded,) = harness.kafka.log(MemoryEngine.TOPIC, 1)
    assert CODEC.decode(forwarded.value()).intent is ProcessInstanceIntent.CANCEL
    assert [name for name, _ in forwarded.headers()] == ["recordType", "valueType", "intent"]
    assert processed_positions(forwarded.headers()) is None
