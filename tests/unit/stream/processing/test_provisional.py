"""A batch processes its client commands at provisional positions while their copies travel
to the log; `settle` then names the real positions everywhere the batch wrote them."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from partita.processing import ProcessingOutput
from partita.protocol.encoder import zigzag
from partita.protocol.enums import RejectionType
from partita.protocol.headers import ReplyTo
from partita.protocol.intents import ErrorIntent, JobBatchIntent, ProcessInstanceCreationIntent
from partita.protocol.records import Record, command, event
from partita.protocol.values import ErrorValue, JobBatchValue, ProcessInstanceCreationValue
from partita.stream.processing.provisional import PROVISIONAL, describe, provisional, settle

REPLY = ReplyTo("app.replies", None, b"corr-1")


def _from(position: int, record: Record) -> Record:
    return replace(record, source_record_position=position)


def test_settle_names_the_copies_real_positions_in_every_output() -> None:
    created = event(ProcessInstanceCreationIntent.CREATED, ProcessInstanceCreationValue(), 7)
    error = event(ErrorIntent.CREATED, ErrorValue(error_event_position=provisional(1)), 8)
    rejected = replace(
        command(ProcessInstanceCreationIntent.CREATE, ProcessInstanceCreationValue()),
        rejection_type=RejectionType.INVALID_ARGUMENT,
    )
    pushed = event(JobBatchIntent.ACTIVATED, JobBatchValue(type="work"), 9)
    follow_up = replace(created, position=provisional(0))  # a command spilled to the log
    earlier = _from(40, created)  # from a command of the log: already real
    output = ProcessingOutput(
        records=[
            (0, _from(provisional(0), created)),
            (0, _from(provisional(1), error)),
            (0, earlier),
            (2, follow_up),
        ],
        replies=[(REPLY, _from(provisional(1), rejected))],
        pushed=[("ns.jobs.work", 0, 9, _from(provisional(0), pushed))],
    )
    settle(output, [103, 105])
    (_, first), (_, second), (_, third), (_, fourth) = output.records
    assert first.source_record_position == 103
    assert second.source_record_position == 105
    assert second.value.error_event_position == 105
    assert third is earlier  # untouched
    assert fourth.position == 103
    assert output.replies[0][1].source_record_position == 105
    assert output.pushed[0][3].source_record_position == 103
    assert all(
        r.source_record_position < PROVISIONAL and r.position < PROVISIONAL
        for r in [*(r for _, r in output.records), output.replies[0][1], output.pushed[0][3]]
    )


def test_a_provisional_position_without_its_copy_is_a_bug_not_a_guess() -> None:
    created = event(ProcessInstanceCreationIntent.CREATED, ProcessInstanceCreationValue(), 7)
    output = ProcessingOutput(records=[(0, _from(provisional(2), created))])
    with pytest.raises(AssertionError, match="no copy 2 in a batch of 2 copies"):
        settle(output, [10, 11])


def test_a_provisional_position_is_beyond_any_offset_and_never_shorter_on_the_wire() -> None:
    assert provisional(0) > 2**62 - 1
    assert len(zigzag(provisional(0))) >= len(zigzag(2**62 - 1))
    assert describe(provisional(3)) == "copy 3 of this batch (not yet on the log)"
    assert describe(17) == "offset 17"
