"""Records no client may write, on the real broker: forged events and rejections, garbage,
internal intents, keys of another log, variables too large or too deep, and a regular expression
that backtracks for ever are each refused (or end) at once, naming why, and never reach the
log as if the engine had written them; honest work still gets through."""

from __future__ import annotations

import json
import time

import pytest

from partita.client import Client
from partita.protocol.enums import RecordType, RejectionType, ValueType
from partita.protocol.headers import RECORD_TYPE
from partita.protocol.intents import (
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    TimerIntent,
)
from partita.protocol.keys import encode_key
from partita.protocol.records import Record, command
from partita.protocol.values import (
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    TimerValue,
)
from tests.support.hostile_attack import (
    Attack,
    assert_still_processing,
    copy_of,
    job_of,
    log_messages,
)
from tests.support.worker_processes import CODEC, read_log, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.codec]  # also run with the pure-Python codec


def test_forged_events_rejections_and_garbage_never_reach_the_log(attack: Attack) -> None:
    config = attack.config
    key = encode_key(1, 10**6)
    forged_event = Record(
        RecordType.EVENT,
        ValueType.PROCESS_INSTANCE,
        ProcessInstanceIntent.ELEMENT_ACTIVATED,
        ProcessInstanceValue(process_instance_key=key, element_id="x"),
        key,
    )
    forged_rejection = Record(
        RecordType.COMMAND_REJECTION,
        ValueType.JOB,
        JobIntent.COMPLETE,
        JobValue(),
        key,
        rejection_type=RejectionType.NOT_FOUND,
        rejection_reason="forged",
    )
    offsets = {
        "event": attack.send_record(0, forged_event),
        "rejection": attack.send_record(0, forged_rejection),
        # a forged event whose headers say COMMAND: caught after decoding
        "disguised": attack.send(0, CODEC.encode(forged_event), [(RECORD_TYPE, b"COMMAND")]),
        "garbage behind an EVENT header": attack.send(
            0, b"\xc3\x01garbage", [(RECORD_TYPE, b"EVENT")]
        ),
        "garbage": attack.send(0, b"\x00" * 64),
        "empty": attack.send(0, b""),
    }
    for what, offset in offsets.items():
        rejection = attack.rejection_of(0, offset)
        assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT, what
        assert rejection.source_record_position == -1, what
    log = read_log(config)
    assert not log.raw_commands[0]
    events = [r for r in log.partitions[0] if r.record_type is RecordType.EVENT]
    assert all(r.key != key for r in events)
    copies = [r for r in log.partitions[0] if r.record_type is RecordType.COMMAND]
    assert all(r.key != key for r in copies)


def test_internal_intents_and_foreign_keys_are_refused_naming_them(attack: Attack) -> None:
    config = attack.config
    with Client(config, timeout=60) as client:
        created = client.create_instance("hostile", {})
        instance = created.key
        job_key = next(k for k, j in job_of(client, instance) if j.process_instance_key == instance)
        partition = (instance >> 51) - 1
        element = next(
            r
            for r in read_log(config).partitions[partition]
            if r.record_type is RecordType.EVENT
            and r.value_type is ValueType.PROCESS_INSTANCE
            and r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED
            and r.value.element_id == "task"  # type: ignore[union-attr]
            and r.value.process_instance_key == instance  # type: ignore[union-attr]
        )
        internal = [
            command(ProcessInstanceIntent.COMPLETE_ELEMENT, element.value, element.key),
            command(TimerIntent.TRIGGER, TimerValue(process_instance_key=instance), key=instance),
            command(JobIntent.TIME_OUT, JobValue(), key=job_key),
        ]
        for record in internal:
            offset = attack.send_record(partition, record)
            rejection = attack.rejection_of(partition, offset)
            assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
            assert f"{record.value_type.name} {record.intent.name}" in rejection.rejection_reason
            assert "only the engine may write" in rejection.rejection_reason
        foreign = command(JobIntent.COMPLETE, JobValue(variables="{}"), key=encode_key(77, 1))
        offset = attack.send_record(0, foreign)
        rejection = attack.rejection_of(0, offset)
        assert "belongs to partition 76, but the log has 2" in rejection.rejection_reason
        # the task was not completed behind its job's back: the job still completes it
        completed = client.complete_job(job_key, {"done": True})
        assert completed.intent is JobIntent.COMPLETED


def test_oversized_and_deeply_nested_variables_are_rejected(attack: Attack) -> None:
    config = attack.config
    documents = {
        "deep": '{"a":' * 100_000 + "1" + "}" * 100_000,
        "huge integer": '{"n": ' + "9" * 5000 + "}",
        "too large": json.dumps({"blob": "x" * (4 * 1024 * 1024)}),
    }
    offsets = {}
    for what, variables in documents.items():
        record = command(
            ProcessInstanceCreationIntent.CREATE,
            ProcessInstanceCreationValue(bpmn_process_id="hostile", variables=variables),
        )
        if what == "too large":  # past the record limit: refused before it is decoded
            offsets[what] = attack.send(1, b"\xc3\x01" + b"x" * (4 * 1024 * 1024 - 40 * 1024))
        else:
            offsets[what] = attack.send_record(1, record)
    for what, offset in offsets.items():
        copy: list[Record | None] = [None]

        def answered(offset: int = offset, copy: list[Record | None] = copy) -> bool:
            copy[0] = copy_of(config, 1, offset)
            if copy[0] is None:
                return any(
                    r.record_type is RecordType.COMMAND_REJECTION
                    and f"offset {offset} of {config.commands_topic}/1" in r.rejection_reason
                    for _, _, r in log_messages(config, 1)
                )
            return any(
                r.source_record_position == copy[0].position for _, _, r in log_messages(config, 1)
            )

        wait_until(answered, 60, f"the answer to the {what} command", attack.worker.tail)
        results = [
            r
            for _, _, r in log_messages(config, 1)
            if r.record_type is RecordType.COMMAND_REJECTION
            and (
                (copy[0] is not None and r.source_record_position == copy[0].position)
                or f"offset {offset} of {config.commands_topic}/1" in r.rejection_reason
            )
        ]
        assert [r.rejection_type for r in results] == [RejectionType.INVALID_ARGUMENT], what
    assert_still_processing(config, attack.worker)


def test_a_catastrophic_regular_expression_ends_at_once(attack: Attack) -> None:
    """`(a+)+$` against a long run of a's and a '!' backtracks for ever in a backtracking
    engine; the instance must complete (on the default flow) well within the request time."""
    with Client(attack.config, timeout=60) as client:
        started = time.monotonic()
        result = client.create_instance(
            "regex", {"text": "a" * 5000 + "!", "pattern": "(a+)+$"}, await_result=True
        )
        assert result.value_type is ValueType.PROCESS_INSTANCE_RESULT, result
        assert time.monotonic() - started < 30
    assert_still_processing(attack.config, attack.worker)
