"""What admission reads from a client record's headers: the record type it declares (the first
`recordType` header: anything but COMMAND is refused before decoding) and its reply address
(`kafka_replyTopic`, `kafka_replyPartition`, `kafka_correlationId`). Headers come as
confluent-kafka gives them (a list of name and bytes pairs) or as a mapping."""

from __future__ import annotations

from typing import Any

import pytest

from partita.bench.loop import bench_command
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import RECORD_TYPE, ReplyTo, record_headers
from partita.stream.processing.admission import Admitted, Refused, admit
from tests.support.memory import Message

CODEC = RecordCodec()
COMMAND = bench_command(1)
REPLY = ReplyTo("answers", 2, b"c-7")


def _admit(headers: Any) -> Admitted | Refused:
    message = Message("ns.commands", 0, 12, CODEC.encode(COMMAND), headers)
    return admit(CODEC, message, 12, topic="ns.commands", partition=0, partition_count=1)


@pytest.mark.parametrize(
    "headers",
    [
        list(record_headers(COMMAND)),
        [*record_headers(COMMAND), *REPLY.headers()],
        [*REPLY.headers(), *record_headers(COMMAND)],
        [*REPLY.headers()],  # no record type declared: the decoded record says
        None,
        dict(record_headers(COMMAND)),
        {**dict(record_headers(COMMAND)), **dict(REPLY.headers())},
    ],
)
def test_a_command_is_admitted_with_the_reply_address_its_headers_name(headers: Any) -> None:
    verdict = _admit(headers)
    assert isinstance(verdict, Admitted)
    assert verdict.record == COMMAND.with_position(12)
    names = [name for name, _ in headers] if isinstance(headers, list) else list(headers or ())
    assert verdict.reply == (REPLY if "kafka_replyTopic" in names else None)


@pytest.mark.parametrize(
    ("headers", "kind"),
    [
        ([(RECORD_TYPE, b"EVENT"), *REPLY.headers()], "EVENT"),
        ([(RECORD_TYPE, b"EVENT"), (RECORD_TYPE, b"COMMAND")], "EVENT"),  # the first counts
        ([(RECORD_TYPE, "COMMAND_REJECTION")], "COMMAND_REJECTION"),  # a str value too
        ({RECORD_TYPE: "EVENT"}, "EVENT"),
    ],
)
def test_a_record_declared_other_than_a_command_is_refused_naming_where(
    headers: Any, kind: str
) -> None:
    verdict = _admit(headers)
    assert isinstance(verdict, Refused)
    assert verdict.reason == (
        f"record at offset 12 of ns.commands/0 is a {kind}: clients may write only COMMAND"
        " records to ns.commands"
    )
    names = [name for name, _ in headers] if isinstance(headers, list) else list(headers)
    assert verdict.reply == (REPLY if "kafka_replyTopic" in names else None)


def test_only_the_first_record_type_header_counts_when_it_says_command() -> None:
    verdict = _admit([(RECORD_TYPE, b"COMMAND"), (RECORD_TYPE, b"EVENT")])
    assert isinstance(verdict, Admitted)
