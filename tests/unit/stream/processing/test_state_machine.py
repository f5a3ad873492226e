"""The processing state machine (`partita.stream.processing.state_machine`) on the in-memory log:
what a batch leaves on the log, in the replies and in state when a command's processor raises,
rejects, writes records too large for Kafka, or causes more follow-up commands than a batch takes.

The engine here is a toy of its own, so each behaviour is chosen by the command and nothing
of the workflow engine is involved. Its instances live in the VARIABLE column family under
(instance key, "process"), written by the CREATED applier and deleted by the TERMINATED
applier, so a state change an undone attempt left behind shows in the state digest. Every
test ends by rebuilding state from the log's events alone and comparing digests."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from partita.processing import Engine, ProcessingContext, RejectionError, banning
from partita.processing.banning import is_banned
from partita.protocol.enums import BpmnElementType, RecordType, RejectionType
from partita.protocol.headers import ReplyTo, record_headers
from partita.protocol.intents import (
    ErrorIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    VariableIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    ErrorValue,
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    VariableValue,
)
from partita.state import ColumnFamilies, PartitionDb
from tests.support.memory import CODEC, MemoryEngine

INSTANCES = ColumnFamilies.VARIABLE
CREATE = ProcessInstanceCreationIntent.CREATE
CREATED = ProcessInstanceCreationIntent.CREATED
CANCEL = ProcessInstanceIntent.CANCEL
TERMINATED = ProcessInstanceIntent.ELEMENT_TERMINATED


class Toy:
    """CREATE (by bpmnProcessId): a new instance, CREATED as the reply; then "reject-late"
    rejects INVALID_ARGUMENT, "huge" also writes a variable event over the codec's record
    limit, and variables {"spawn": n} add n follow-up CREATEs of "child". CANCEL (key = the
    instance): TERMINATED, then an instance of "fragile" raises on every attempt and one of
    "flaky" on the first attempt only. Every processor call is counted per command."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, int]] = Counter()
        """(intent, command position) -> processor calls."""
        self.engine = Engine()
        banning.register(self.engine)
        self.engine.processor(CREATE, self.create)
        self.engine.applier(CREATED, self.apply_created)
        self.engine.processor(CANCEL, self.cancel)
        self.engine.applier(TERMINATED, self.apply_terminated)

    def create(self, record: Record, ctx: ProcessingContext) -> None:
        self.calls[("CREATE", record.position)] += 1
        value = record.value
        assert isinstance(value, ProcessInstanceCreationValue)
        key = ctx.keys.next_key()
        ctx.append_event(CREATED, replace(value, process_instance_key=key), key, respond=True)
        if value.bpmn_process_id == "reject-late":
            raise RejectionError(RejectionType.INVALID_ARGUMENT, "reject-late always says no")
        if value.bpmn_process_id == "huge":
            blob = VariableValue("blob", "x" * CODEC.max_record_bytes, key, key)
            ctx.append_event(VariableIntent.CREATED, blob, ctx.keys.next_key())
        for _ in range(json.loads(value.variables).get("spawn", 0)):
            ctx.append_command(CREATE, ProcessInstanceCreationValue(bpmn_process_id="child"))

    @staticmethod
    def apply_created(record: Record, db: PartitionDb) -> None:
        value = record.value
        assert isinstance(value, ProcessInstanceCreationValue)
        db.column(INSTANCES).insert((record.key, "process"), value.bpmn_process_id)

    def cancel(self, record: Record, ctx: ProcessingContext) -> None:
        self.calls[("CANCEL", record.position)] += 1
        process = ctx.state.column(INSTANCES).get((record.key, "process"))
        if process is None:
            raise RejectionError(RejectionType.NOT_FOUND, f"no process instance {record.key}")
        value = ProcessInstanceValue(
            bpmn_process_id=process,
            process_instance_key=record.key,
            element_id=process,
            bpmn_element_type=BpmnElementType.PROCESS,
        )
        ctx.append_event(TERMINATED, value, record.key, respond=True)
        if process == "fragile" or (
            process == "flaky" and self.calls[("CANCEL", record.position)] == 1
        ):
            raise RuntimeError(f"cannot cancel {record.key}")

    @staticmethod
    def apply_terminated(record: Record, db: PartitionDb) -> None:
        db.column(INSTANCES).delete_existing((record.key, "process"))


@pytest.fixture
def toy() -> Toy:
    return Toy()


@pytest.fixture
def log(toy: Toy, tmp_path: Path) -> Iterator[MemoryEngine]:
    """One partition of the toy engine on the in-memory log."""
    engine = MemoryEngine(toy.engine, tmp_path, partitions=1)
    yield engine
    engine.assert_replay_matches(tmp_path)
    engine.close()


def _send(log: MemoryEngine, record: Record, correlation: bytes = b"") -> int:
    """Append a command (with a reply address when `correlation` is given) and process until
    quiet; returns the command's position."""
    reply = ReplyTo(log.REPLIES, 0, correlation) if correlation else None
    position = log.send(0, record, reply)
    log.run()
    return position


def _answers(log: MemoryEngine, correlation: bytes) -> list[Record]:
    """The replies with `correlation`, as the log's copy of each would read (replies are
    not on the log, so they carry no position)."""
    return [record for key, record in log.replies() if key == correlation]


def _unplaced(record: Record) -> Record:
    return record.with_position(-1)


def _kinds(records: list[Record]) -> list[tuple[str, str, str]]:
    return [(r.record_type.name, r.value_type.name, r.intent.name) for r in records]


def _process_of(record: Record) -> str:
    """The bpmnProcessId of a creation command or its CREATED."""
    assert isinstance(record.value, ProcessInstanceCreationValue)
    return record.value.bpmn_process_id


def _creation(process: str, **variables: object) -> Record:
    value = ProcessInstanceCreationValue(bpmn_process_id=process, variables=json.dumps(variables))
    return command(CREATE, value)


def _new_instance(log: MemoryEngine, process: str) -> int:
    position = _send(log, _creation(process))
    (created,) = log.results_of(0, position)
    assert created.intent is CREATED
    return created.key


def _cancel(instance: int) -> Record:
    return command(CANCEL, ProcessInstanceValue(process_instance_key=instance), key=instance)


def test_a_command_failing_twice_is_answered_by_an_error_and_its_instance_banned(
    log: MemoryEngine, toy: Toy
) -> None:
    """Protects "retry once, then ban": the processor runs exactly twice; what both attempts
    wrote is undone (no TERMINATED on the log, the instance still in state); the command's
    results are one ERROR event naming the instance, the command's position and the exception,
    then a PROCESSING_ERROR rejection, which is the reply. A later command for the instance
    is rejected INVALID_STATE without running its processor; other instances go on."""
    fragile = _new_instance(log, "fragile")
    failing = _send(log, _cancel(fragile), b"first")
    assert toy.calls[("CANCEL", failing)] == 2
    error, rejection = log.results_of(0, failing)
    assert _kinds([error, rejection]) == [
        ("EVENT", "ERROR", "CREATED"),
        ("COMMAND_REJECTION", "PROCESS_INSTANCE", "CANCEL"),
    ]
    assert isinstance(error.value, ErrorValue)
    assert error.value.exception_message == f"RuntimeError: cannot cancel {fragile}"
    assert (error.value.error_event_position, error.value.process_instance_key) == (
        failing,
        fragile,
    )
    assert 'raise RuntimeError(f"cannot cancel' in error.value.stacktrace
    assert rejection.rejection_type is RejectionType.PROCESSING_ERROR
    assert rejection.rejection_reason == (
        "unexpected error processing PROCESS_INSTANCE CANCEL:"
        f" RuntimeError: cannot cancel {fragile}"
    )
    assert _answers(log, b"first") == [_unplaced(rejection)]
    db = log.dbs[0]
    assert is_banned(db, fragile)
    assert db.column(INSTANCES).get((fragile, "process")) == "fragile"
    assert TERMINATED not in [r.intent for r in log.records(0)]

    again = _send(log, _cancel(fragile), b"again")
    (banned,) = log.results_of(0, again)
    assert toy.calls[("CANCEL", again)] == 0
    assert banned.rejection_type is RejectionType.INVALID_STATE
    assert banned.rejection_reason == (
        f"process instance {fragile} is banned after an unexpected processing error;"
        " see its ERROR event"
    )
    assert _answers(log, b"again") == [_unplaced(banned)]

    other = _new_instance(log, "other")
    (terminated,) = log.results_of(0, _send(log, _cancel(other)))
    assert (terminated.intent, terminated.key) == (TERMINATED, other)
    assert not is_banned(db, other)


def test_the_ban_is_state_that_replay_restores(log: MemoryEngine, tmp_path: Path) -> None:
    """Protects the ban's applier: a store rebuilt from the events alone holds the ban (the
    ERROR event bans its instance), so a restarted partition keeps rejecting it."""
    fragile = _new_instance(log, "fragile")
    _send(log, _cancel(fragile))
    with PartitionDb(tmp_path / "rebuilt") as fresh:
        for record in log.events(0):
            log.engine.apply(record, fresh)
        fresh.commit()
        assert is_banned(fresh, fragile)
        assert fresh.column(INSTANCES).get((fragile, "process")) == "fragile"


def test_a_command_failing_once_is_retried_and_only_its_second_attempt_is_written(
    log: MemoryEngine, toy: Toy
) -> None:
    """Protects the retry: a processor that raises on its first attempt is run again at once;
    the first attempt's event is undone (the log holds one TERMINATED, not two), no ERROR is
    written, the instance is not banned, and the second attempt's state stands."""
    flaky = _new_instance(log, "flaky")
    position = _send(log, _cancel(flaky), b"flaky")
    assert toy.calls[("CANCEL", position)] == 2
    (terminated,) = log.results_of(0, position)
    assert (terminated.intent, terminated.key) == (TERMINATED, flaky)
    assert _answers(log, b"flaky") == [_unplaced(terminated)]
    assert ErrorIntent.CREATED not in [r.intent for r in log.records(0)]
    assert not is_banned(log.dbs[0], flaky)
    assert log.dbs[0].column(INSTANCES).get((flaky, "process")) is None


def test_a_rejection_is_the_only_result_and_undoes_what_the_processor_wrote(
    log: MemoryEngine, toy: Toy
) -> None:
    """Protects the rollback on a rejection: the processor applied CREATED (and took a key)
    before it rejected; the log gets the rejection alone, with its type and reason, as the
    one reply; state is as before (the key is given back); it is not retried."""
    before = log.dbs[0].digest()
    position = _send(log, _creation("reject-late"), b"late")
    (rejection,) = log.results_of(0, position)
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert (rejection.value_type.name, rejection.intent) == ("PROCESS_INSTANCE_CREATION", CREATE)
    assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
    assert rejection.rejection_reason == "reject-late always says no"
    assert _answers(log, b"late") == [_unplaced(rejection)]
    assert toy.calls[("CREATE", position)] == 1
    assert log.dbs[0].digest() == before
    assert CREATED not in [r.intent for r in log.records(0)]


def test_a_processor_rejection_names_what_is_missing(log: MemoryEngine) -> None:
    """Protects a processor's own rejection: CANCEL of an instance that does not exist is
    rejected NOT_FOUND with the processor's reason."""
    position = _send(log, _cancel(12345), b"nothing")
    (rejection,) = log.results_of(0, position)
    assert rejection.rejection_type is RejectionType.NOT_FOUND
    assert rejection.rejection_reason == "no process instance 12345"
    assert _answers(log, b"nothing") == [_unplaced(rejection)]


def test_a_command_no_processor_handles_is_rejected_invalid_argument(log: MemoryEngine) -> None:
    """Protects the answer to a command the engine does not know: a rejection naming the value
    type and intent, not silence or a crash."""
    position = _send(log, command(JobIntent.COMPLETE, JobValue(), key=77), b"job")
    (rejection,) = log.results_of(0, position)
    assert _kinds([rejection]) == [("COMMAND_REJECTION", "JOB", "COMPLETE")]
    assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
    assert rejection.rejection_reason == "no processor for JOB COMPLETE in this engine"
    assert _answers(log, b"job") == [_unplaced(rejection)]


def test_an_undecodable_command_is_rejected_naming_its_offset(toy: Toy, tmp_path: Path) -> None:
    """Protects the answer to a record that is not a valid command: a rejection naming the
    log offset, as the reply to the sender; the partition goes on with the next command.
    (Its own harness: the harness's record queries would decode the garbage too.)"""
    log = MemoryEngine(toy.engine, tmp_path, partitions=1)
    try:
        headers = [*record_headers(_creation("x")), *ReplyTo(log.REPLIES, 0, b"bad").headers()]
        garbage = log.kafka.append(log.TOPIC, 0, b"\xc3\x01not avro at all", headers).offset()
        after = log.send(0, _creation("after"))
        log.run()
        written = [
            CODEC.decode(m.value(), offset=m.offset())
            for m in log.kafka.log(log.TOPIC, 0)
            if m.offset() != garbage
        ]
        command_after, rejection, created = written
        assert rejection.source_record_position == garbage
        assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
        assert rejection.rejection_reason.startswith(
            f"record at offset {garbage} of {log.TOPIC}/0 is not a valid command: "
        )
        assert _answers(log, b"bad") == [_unplaced(rejection)]
        assert command_after.position == after
        assert (created.intent, created.source_record_position) == (CREATED, after)
    finally:
        log.close()


def test_a_command_whose_records_are_too_large_is_rejected_and_its_batch_goes_on(
    log: MemoryEngine,
) -> None:
    """Protects the size check: a command whose events would not fit in a Kafka record is
    rejected EXCEEDED_BATCH_RECORD_SIZE with nothing of it applied (no CREATED, no variable,
    state and keys as before), while the command before it in the same batch stands and the
    partition goes on."""
    small = log.send(0, _creation("small"))
    huge = log.send(0, _creation("huge"), ReplyTo(log.REPLIES, 0, b"huge"))
    log.run()
    (created,) = log.results_of(0, small)
    assert created.intent is CREATED
    (rejection,) = log.results_of(0, huge)
    assert rejection.rejection_type is RejectionType.EXCEEDED_BATCH_RECORD_SIZE
    assert f"over the limit of {CODEC.max_record_bytes}" in rejection.rejection_reason
    assert "the command was not applied" in rejection.rejection_reason
    assert _answers(log, b"huge") == [_unplaced(rejection)]
    assert [r.intent for r in log.events(0)] == [CREATED]
    assert log.dbs[0].column(INSTANCES).get((created.key, "process")) == "small"
    next_instance = _new_instance(log, "after")
    assert next_instance == created.key + 1  # the rejected attempt's keys were given back


def test_follow_ups_beyond_the_batch_limit_are_spilled_to_the_log_and_processed_next(
    log: MemoryEngine, toy: Toy
) -> None:
    """Protects the follow-up spill: with 3 commands a batch, a command causing 5 follow-ups
    is processed with its first 2 follow-ups in its batch (their CREATED name the parent's
    position, the follow-ups themselves never reach the log); the other 3 are written to the
    log as COMMANDs, in order, and the next batch processes each once. Nothing is lost or
    processed twice: 6 instances, 6 distinct keys."""
    machine = log.machines[0]
    machine.max_commands_in_batch = 3
    parent = log.send(0, _creation("parent", spawn=5))
    assert machine.process(log.kafka.log(log.TOPIC, 0)) == 3
    after_first = log.records(0)
    assert _kinds(after_first[parent + 1 :]) == [
        ("EVENT", "PROCESS_INSTANCE_CREATION", "CREATED"),
        ("EVENT", "PROCESS_INSTANCE_CREATION", "CREATED"),
        ("EVENT", "PROCESS_INSTANCE_CREATION", "CREATED"),
        *[("COMMAND", "PROCESS_INSTANCE_CREATION", "CREATE")] * 3,
    ]
    in_batch = after_first[parent + 1 : parent + 4]
    assert [_process_of(r) for r in in_batch] == ["parent", "child", "child"]
    assert {r.source_record_position for r in in_batch} == {parent}
    spilled = [r.position for r in after_first[parent + 4 :]]
    assert {_process_of(r) for r in after_first[parent + 4 :]} == {"child"}

    log.run()
    for position in spilled:
        (created,) = log.results_of(0, position)
        assert created.intent is CREATED and _process_of(created) == "child"
        assert toy.calls[("CREATE", position)] == 1
    keys = [r.key for r in log.events(0) if r.intent is CREATED]
    assert len(keys) == len(set(keys)) == 6
    assert toy.calls[("CREATE", parent)] == 3  # the parent and the 2 follow-ups in its batch
