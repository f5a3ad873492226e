"""The compiled common case of admission (`Admitter` of `partita_native`) against the Python
path alone: for any batch of ingress records (valid client commands with or without keys,
reply addresses and declared record types, records of any other type and intent, damaged
bytes, headers as confluent-kafka gives them or not), `Admission.take` with it gives the same
copies (record, bytes, headers, reply address, position), forwards, refusals and counts as
without it. The compiled loop only ever takes what the Python path would copy unchanged.

Without the compiled module these tests skip, unless PARTITA_NATIVE=on (as the suite's main
pass sets), where they fail: CI never skips them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from partita.bench.loop import bench_command
from partita.processing import ProcessingOutput
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.headers import RECORD_TYPE, ReplyTo, record_headers
from partita.protocol.intents import CLIENT_COMMANDS
from partita.protocol.keys import encode_key
from partita.protocol.records import Record
from partita.protocol.routing import partition_for_command
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing.admission import Admission
from partita.stream.processing.backpressure import Backpressure
from tests.support.fuzz_profiles import fuzz_settings
from tests.support.memory import Message
from tests.support.native_codec import compiled_decoder
from tests.support.record_strategies import records

TOPIC = "ns.commands"
REPLY = ReplyTo("answers", 1, b"corr")
_KINDS = sorted(CLIENT_COMMANDS, key=lambda pair: (pair[0].name, pair[1].name))


@st.composite
def client_commands(draw: st.DrawFn) -> Record:
    """A valid client command, most often without a key (a creation, a publish, ...)."""
    value_type, intent = draw(st.sampled_from(_KINDS))
    record = draw(records(value_type))
    key = draw(st.sampled_from([-1, -1, -1, encode_key(1, 5), encode_key(3, 9), 7]))
    return replace(record, record_type=RecordType.COMMAND, intent=intent, key=key)


@st.composite
def ingress_records(draw: st.DrawFn, codec: RecordCodec) -> tuple[bytes, Any]:
    record = draw(st.one_of(client_commands(), client_commands(), records()))
    value = codec.encode(record)
    if draw(st.booleans()) and len(value) > 12:
        cut = draw(st.integers(0, len(value) - 1))
        value = value[:cut] + bytes([value[cut] ^ 0x55]) + value[cut + 1 :]  # damaged
    headers: Any = draw(
        st.sampled_from(
            [
                list(record_headers(record)),
                [*record_headers(record), *REPLY.headers()],
                [*REPLY.headers()],
                [(RECORD_TYPE, b"EVENT"), *record_headers(record)],
                [(RECORD_TYPE, "COMMAND")],
                [(RECORD_TYPE, None), (RECORD_TYPE, b"EVENT")],
                None,
                dict(record_headers(record)),
            ]
        )
    )
    return value, headers


class _Context:
    """What admission writes refusals to: the rejections, in order."""

    def __init__(self) -> None:
        self.output = ProcessingOutput()
        self.rejections: list[tuple[Record, ReplyTo | None, RejectionType, str]] = []
        self._current: tuple[Record, ReplyTo | None] | None = None

    def begin(self, record: Record, reply: ReplyTo | None, _now: int) -> None:
        self._current = (record, reply)

    def reject(self, rejection_type: RejectionType, reason: str) -> None:
        assert self._current is not None
        self.rejections.append((*self._current, rejection_type, reason))


def _take(  # noqa: PLR0917 - the cases' parameters, each named at the call
    codec: RecordCodec,
    compiled: bool,
    messages: list[Message],
    partitions: int,
    first: int,
    backpressure: Backpressure | None,
) -> tuple[Any, ...]:
    metrics = ProcessingMetrics()
    admission = Admission(
        codec,
        topic=TOPIC,
        partition=0,
        partition_count=partitions,
        route=lambda record: partition_for_command(record, partitions, 0),
        metrics=metrics,
        backpressure=backpressure,
    )
    assert admission.compiled is not None, "partita_native predates Admitter: run scripts/setup"
    if not compiled:
        admission.compiled = None
    context = _Context()
    copies, last = admission.take(context, messages, first, len(messages) + 3, 77, position=500)  # type: ignore[arg-type]
    return (
        [(c.record, c.value, c.headers, c.reply) for c in copies],
        last,
        context.output.forwarded,
        context.rejections,
        (metrics.ingress, metrics.forwarded, metrics.refused, metrics.backpressured),
    )


def _codec() -> RecordCodec:
    compiled_decoder()  # skips (or fails under PARTITA_NATIVE=on) without the compiled module
    return RecordCodec(native=True)


@fuzz_settings(max_examples=150)
@given(
    data=st.data(),
    partitions=st.sampled_from([1, 3]),
    first=st.integers(0, 3),
    limit=st.sampled_from([0, 0, 2, 50]),
)
def test_take_gives_the_same_verdicts_with_the_compiled_common_case(
    data: st.DataObject, partitions: int, first: int, limit: int
) -> None:
    codec = _codec()
    entries = data.draw(st.lists(ingress_records(codec), max_size=8))
    messages = [
        Message(TOPIC, 0, offset, value, headers) for offset, (value, headers) in enumerate(entries)
    ]
    backpressure = Backpressure(limit_lag=limit, commands_topic=TOPIC) if limit else None
    compiled = _take(codec, True, messages, partitions, first, backpressure)
    assert compiled == _take(codec, False, messages, partitions, first, backpressure)


def test_the_compiled_case_takes_plain_commands_and_leaves_the_rest_to_decide() -> None:
    codec = _codec()
    plain = codec.encode(bench_command(3))
    messages = [
        Message(TOPIC, 0, 0, plain, None),
        Message(TOPIC, 0, 1, b"not a record", None),
        Message(TOPIC, 0, 2, plain, [*REPLY.headers()]),
    ]
    copies, last, _, rejections, counts = _take(codec, True, messages, 1, 0, None)
    assert [(record.position, record.timestamp, reply) for record, _, _, reply in copies] == [
        (500, 77, None),
        (501, 77, REPLY),
    ]
    assert [headers[-1] for _, _, headers, _ in copies] == [
        ("partitaIngressOffset", "0"),
        ("partitaIngressOffset", "2"),
    ]
    assert last == 2
    assert len(rejections) == 1 and "record at offset 1 of ns.commands/0" in rejections[0][3]
    assert counts == (3, 0, 1, 0)
