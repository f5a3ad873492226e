from __future__ import annotations

import struct

import pytest

from partita.protocol import headers
from partita.protocol.errors import InvalidKeyError
from partita.protocol.intents import JobIntent
from partita.protocol.keys import (
    counter_of_key,
    encode_key,
    kafka_partition_of_key,
    partition_id_of_kafka,
    partition_id_of_key,
)
from partita.protocol.records import command, event
from partita.protocol.routing import (
    murmur2,
    partition_for_correlation_key,
    partition_for_key,
    to_positive,
)
from partita.protocol.values import JobValue


def test_keys_encode_the_partition_in_the_top_13_bits() -> None:
    key = encode_key(partition_id_of_kafka(0), 1)
    assert key == 2251799813685249  # Zeebe's first key on partition 1
    assert partition_id_of_key(key) == 1
    assert kafka_partition_of_key(key) == 0
    assert counter_of_key(key) == 1
    last = encode_key(4095, (1 << 51) - 1)
    assert last < 2**63  # still a positive Java long
    assert kafka_partition_of_key(last) == 4094


@pytest.mark.parametrize("bad", [-1, 0, 5])
def test_non_keys_have_no_partition(bad: int) -> None:
    with pytest.raises(InvalidKeyError, match=f"{bad} is not an entity key"):
        partition_id_of_key(bad)


def test_key_ranges_are_checked() -> None:
    with pytest.raises(InvalidKeyError, match="partition id 0 out of range"):
        encode_key(0, 1)
    with pytest.raises(InvalidKeyError, match="counter"):
        encode_key(1, 1 << 51)


def test_partition_for_key_refuses_keys_of_a_larger_log() -> None:
    key = encode_key(5, 9)
    assert partition_for_key(key, 8) == 4
    with pytest.raises(InvalidKeyError, match="belongs to partition 4, but the log has 3"):
        partition_for_key(key, 3)


@pytest.mark.parametrize(
    ("data", "expected"),
    [  # Apache Kafka's UtilsTest.testMurmur2
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafkas_own_test_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_correlation_key_partition_is_javas_default_partitioner() -> None:
    assert to_positive(-973932308) == 1173551340
    assert partition_for_correlation_key("21", 7) == 1173551340 % 7
    assert (
        partition_for_correlation_key("order-é", 3) == to_positive(murmur2("order-é".encode())) % 3
    )


def test_records_carry_filter_headers_as_short_strings() -> None:
    record = event(JobIntent.COMPLETED, JobValue(), key=1)
    assert headers.record_headers(record) == [
        ("recordType", b"EVENT"),
        ("valueType", b"JOB"),
        ("intent", b"COMPLETED"),
    ]
    assert not headers.is_command(headers.record_headers(record))
    assert headers.is_command(headers.record_headers(command(JobIntent.COMPLETE, JobValue())))
    assert headers.is_command(None)  # unknown records get decoded (and rejected if invalid)


def test_spring_kafka_reply_headers_round_trip() -> None:
    reply = headers.ReplyTo("client.replies", 3, b"corr-1")
    raw = reply.headers()
    assert ("kafka_replyPartition", struct.pack(">i", 3)) in raw
    assert raw[0] == ("kafka_replyTopic", b"client.replies")
    assert headers.reply_to(raw) == reply


def test_reply_headers_without_partition_or_with_a_bad_one() -> None:
    raw = [
        ("kafka_replyTopic", b"r"),
        ("kafka_correlationId", b"c"),
        ("kafka_replyPartition", b"xx"),
    ]
    assert headers.reply_to(raw) == headers.ReplyTo("r", None, b"c")
    assert headers.reply_to([("kafka_correlationId", b"c")]) is None
