"""Hostile reply addresses on the real broker: a command whose reply headers name the log,
another topic of the namespace, another namespace, a missing topic or a partition that does not
exist is processed, its reply dropped and counted, and nothing is written there."""

from __future__ import annotations

import time

import pytest

from partita.protocol.enums import RecordType
from partita.protocol.headers import CORRELATION_ID, REPLY_PARTITION, REPLY_TOPIC, ReplyTo
from partita.protocol.intents import JobBatchIntent, ProcessInstanceCreationIntent
from partita.protocol.records import command
from partita.protocol.values import JobBatchValue, ProcessInstanceCreationValue
from tests.support.hostile_attack import (
    Attack,
    assert_still_processing,
    copy_of,
    log_messages,
    turned_away,
)
from tests.support.worker_processes import read_log, wait_until

pytestmark = pytest.mark.kafka


def test_a_reply_naming_the_log_writes_nothing_there(attack: Attack) -> None:
    """The reported attack: JOB_BATCH ACTIVATE whose reply topic is the log itself."""
    config = attack.config
    before = read_log(config)
    dropped_before = turned_away(config).get("replies_dropped", 0)
    activate = command(
        JobBatchIntent.ACTIVATE,
        JobBatchValue(type="hostile-task", worker="x", timeout=60_000, max_jobs_to_activate=5),
    )
    reply = ReplyTo(config.log_topic, 1, b"evil")
    offsets = [attack.send_record(0, activate, reply.headers())]
    for topic in (config.commands_topic, config.snapshots_topic, "other.log", "other.replies"):
        offsets.append(attack.send_record(0, activate, ReplyTo(topic, 0, b"evil").headers()))
    assert_still_processing(config, attack.worker)
    # every command was processed (copied into the log and activated): only its reply is gone
    for offset in offsets:

        def activated(offset: int = offset) -> bool:
            copy = copy_of(config, 0, offset)
            return copy is not None and any(
                r.source_record_position == copy.position
                and r.record_type is RecordType.EVENT
                and r.intent is JobBatchIntent.ACTIVATED
                for _, _, r in log_messages(config, 0)
            )

        wait_until(activated, 60, f"ACTIVATED for ingress offset {offset}", attack.worker.tail)
    after = read_log(config)
    # partition 1 got no record at all from partition 0's batches (no reply, no event)
    new_on_1 = after.partitions[1][len(before.partitions[1]) :]
    assert all(r.partition_id == 2 for r in new_on_1), new_on_1
    # and `partita status` counts one dropped reply per command, the worker's log says why
    wait_until(
        lambda: turned_away(config).get("replies_dropped", 0) - dropped_before >= len(offsets),
        30,
        f"status to count {len(offsets)} dropped replies",
    )
    assert turned_away(config).get("replies_dropped", 0) - dropped_before == len(offsets)
    assert "dropped the reply" in attack.worker.log.read_text()


def test_replies_to_missing_topics_or_partitions_are_dropped_without_stalling(
    attack: Attack,
) -> None:
    config = attack.config
    creation = command(
        ProcessInstanceCreationIntent.CREATE,
        ProcessInstanceCreationValue(bpmn_process_id="hostile"),
    )
    # allowed but never created; a partition past the replies topic's; a hostile partition
    addresses = [
        ReplyTo(f"{config.namespace}.app-replies", 0, b"missing"),
        ReplyTo(config.replies_topic, 99, b"out-of-range"),
        ReplyTo(config.replies_topic, -5, b"negative"),
    ]
    started = time.monotonic()
    for address in addresses:
        attack.send_record(1, creation, address.headers())
    attack.send_record(
        1, creation, [(REPLY_TOPIC, b"\xff\xfe"), (REPLY_PARTITION, b"\x00"), (CORRELATION_ID, b"")]
    )
    assert_still_processing(config, attack.worker)
    # well inside the 30 s transaction timeout that a refused produce used to cost
    assert time.monotonic() - started < 25
    assert "aborting batch" not in attack.worker.log.read_text()
