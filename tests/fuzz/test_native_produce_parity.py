"""The compiled produce loop (`produce_all` of `partita_native`) against the Python loop it
replaces in `BatchTransaction._produce_output`: for any batch of valid records on any
partitions, both make the same `produce` calls (topic, partition, value, key, headers, which
delivery report) in the same order and count the same records on the transaction's own
partition. A record the codec refuses is named by the Python loop, with nothing produced
before it.

Without the compiled module these tests skip, unless PARTITA_NATIVE=on (as the suite's main
pass sets), where they fail: CI never skips them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from partita.processing import ProcessingOutput
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import ValueType
from partita.protocol.errors import EncodeError
from partita.protocol.headers import processed_header, record_headers
from partita.protocol.intents import JobIntent
from partita.protocol.records import Record, command, event
from partita.protocol.values import JobValue
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing import transaction
from partita.stream.processing.replies import ReplyRoutes
from partita.stream.processing.transaction import BatchTransaction
from tests.support.fuzz_profiles import fuzz_settings
from tests.support.memory import Produced, ProducerDouble
from tests.support.native_codec import compiled_decoder
from tests.support.record_strategies import records

OWN = 3
PURE = RecordCodec(native=False)


class _Recorder(ProducerDouble):
    def __init__(self) -> None:
        self.produced: list[Produced] = []

    def queue(self, produced: Produced) -> None:
        self.produced.append(produced)


def _transaction(codec: RecordCodec) -> tuple[BatchTransaction, _Recorder]:
    producer = _Recorder()
    batch = BatchTransaction(
        producer,  # type: ignore[arg-type]  # a double: produce only
        "t.log",
        OWN,
        codec,
        ReplyRoutes(frozenset()),
        lambda: None,
        lambda: None,
        lambda: None,
        ProcessingMetrics(),
    )
    return batch, producer


def _produce(
    codec: RecordCodec, pairs: list[tuple[int, Record]], positions: tuple[int, int] | None
) -> tuple[int, list[tuple[Any, ...]]]:
    batch, producer = _transaction(codec)
    written = batch._produce_output(
        ProcessingOutput(records=list(pairs)), set(), transaction._Delivered(), positions
    )
    calls = [
        (
            p.topic,
            p.partition,
            p.value,
            p.key,
            p.headers,
            getattr(p.on_delivery, "__name__", None),  # which report: on_event, on_own, ...
        )
        for p in producer.produced
    ]
    return written, calls


def _compiled_codec() -> RecordCodec:
    compiled_decoder()  # skips (or fails under PARTITA_NATIVE=on) without the compiled module
    codec = RecordCodec(native=True)
    assert codec.produce_all is not None, "partita_native predates produce_all: run scripts/setup"
    return codec


@fuzz_settings(max_examples=150)
@given(
    pairs=st.lists(st.tuples(st.integers(0, OWN + 1), records()), max_size=8),
    positions=st.none() | st.tuples(st.integers(-1, 10**6), st.integers(-1, 10**6)),
)
def test_both_loops_make_the_same_produce_calls(
    pairs: list[tuple[int, Record]], positions: tuple[int, int] | None
) -> None:
    assert _produce(_compiled_codec(), pairs, positions) == _produce(PURE, pairs, positions)


def test_commands_are_keyed_and_the_last_own_record_carries_the_positions() -> None:
    """What the parity above compares, spelled out once: a command's positive key as 8
    big-endian bytes, the PROCESSED header and the own-record report on the last record on the
    own partition, the event report on the last own event, a command there counted as left."""
    job = JobValue(type="t")
    pairs = [
        (OWN, event(JobIntent.CREATED, job, 7)),
        (1, command(JobIntent.COMPLETE, job, 2**52 + 9)),
        (OWN, command(JobIntent.FAIL, job, 5)),
        (0, event(JobIntent.COMPLETED, job, 8)),
    ]
    written, calls = _produce(_compiled_codec(), pairs, (41, 17))
    assert written == -1  # a command on the own partition: read back and processed
    assert [(partition, key, report) for _, partition, _, key, _, report in calls] == [
        (OWN, None, "on_event"),
        (1, (2**52 + 9).to_bytes(8, "big"), None),
        (OWN, (5).to_bytes(8, "big"), "on_own"),
        (0, None, None),
    ]
    headers = [call[4] for call in calls]
    assert headers[2] == [*record_headers(pairs[2][1]), processed_header(41, 17)]
    assert [headers[i] for i in (0, 1, 3)] == [record_headers(pairs[i][1]) for i in (0, 1, 3)]


def test_a_record_the_codec_refuses_is_named_before_anything_is_produced() -> None:
    job = event(JobIntent.CREATED, JobValue(type="t"), 7)
    wrong = replace(job, value_type=ValueType.MESSAGE)
    batch, producer = _transaction(_compiled_codec())
    with pytest.raises(EncodeError, match="value type MESSAGE does not match the value JobValue"):
        batch._produce_output(
            ProcessingOutput(records=[(OWN, job), (OWN, wrong)]),
            set(),
            transaction._Delivered(),
            None,
        )
    assert producer.produced == []
