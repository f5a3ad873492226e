"""A flood of commands past the backpressure limit on the real broker: the commands over the
limit are refused RESOURCE_EXHAUSTED naming the limit, a job completion in the middle of it is
accepted, new instances are accepted once it drained, and `partita status` counts what the
trust boundary turned away."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from partita.cli import main
from partita.client import Client
from partita.protocol.enums import RejectionType
from partita.protocol.headers import ReplyTo, record_headers
from partita.protocol.intents import JobBatchIntent, JobIntent, ProcessInstanceCreationIntent
from partita.protocol.records import Record, command
from partita.protocol.values import JobBatchValue, ProcessInstanceCreationValue
from tests.support.hostile_attack import (
    BACKPRESSURE_LAG,
    Attack,
    count_created,
    job_of,
    log_messages,
    wait_for_copy,
)
from tests.support.worker_processes import CODEC, wait_until

pytestmark = pytest.mark.kafka


def test_a_flood_past_the_backpressure_limit_is_refused_and_jobs_still_complete(
    attack: Attack,
) -> None:
    config = attack.config
    with Client(config, timeout=60) as client:
        created = client.create_instance("hostile", {})
        batch = job_of(client, created.key)
        job_key = next(k for k, j in batch if j.process_instance_key == created.key)
        flood = 10 * BACKPRESSURE_LAG
        created_before = count_created(config, 0)
        creation = command(
            ProcessInstanceCreationIntent.CREATE,
            ProcessInstanceCreationValue(bpmn_process_id="hostile"),
        )
        producer = Producer({"bootstrap.servers": config.bootstrap, "linger.ms": 20})
        value, headers = CODEC.encode(creation), record_headers(creation)
        for _ in range(flood):
            producer.produce(config.commands_topic, value, partition=0, headers=headers)
        assert producer.flush(30) == 0
        # a job completion in the middle of the flood is always accepted
        completed = client.complete_job(job_key, {})
        assert completed.intent is JobIntent.COMPLETED
        exhausted: list[Record] = []

        def every_command_answered() -> bool:
            records = [r for _, _, r in log_messages(config, 0)]
            exhausted[:] = [
                r for r in records if r.rejection_type is RejectionType.RESOURCE_EXHAUSTED
            ]
            created_now = sum(r.intent is ProcessInstanceCreationIntent.CREATED for r in records)
            return len(exhausted) + created_now - created_before >= flood

        wait_until(every_command_answered, 120, "an answer to every flooded command")
        assert exhausted, "the flood never met backpressure"
        reason = exhausted[0].rejection_reason
        assert f"waiting on {config.commands_topic}" in reason
        assert f"over the limit of {BACKPRESSURE_LAG}" in reason
        # and once the flood has drained, new instances are accepted again
        again = client.create_instance("hostile", {})
        assert again.intent is ProcessInstanceCreationIntent.CREATED


def test_status_shows_what_the_boundary_turned_away(
    attack: Attack, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last: the flood above was backpressured; here one garbage record is refused and the
    reply of one command naming the log is dropped. `partita status` counts exactly that (from
    the engine group's committed offsets): as many backpressured commands as RESOURCE_EXHAUSTED
    rejections on the log, one refused record, one dropped reply."""
    config = attack.config
    flags = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]
    garbage = attack.send(0, b"\x00" * 64)
    attack.rejection_of(0, garbage)
    activate = command(
        JobBatchIntent.ACTIVATE,
        JobBatchValue(type="hostile-task", worker="x", timeout=60_000, max_jobs_to_activate=1),
    )
    offset = attack.send_record(0, activate, ReplyTo(config.log_topic, 1, b"evil").headers())
    wait_for_copy(attack, 0, offset)
    exhausted = [
        sum(
            r.rejection_type is RejectionType.RESOURCE_EXHAUSTED
            for _, _, r in log_messages(config, p)
        )
        for p in range(config.partitions)
    ]
    assert exhausted[0] > 0, "the flood never met backpressure"
    assert exhausted[1:] == [0] * (config.partitions - 1), "only partition 0 was flooded"
    expected = {"refused": 1, "backpressured": exhausted[0], "replies_dropped": 1}

    def counted() -> dict[str, int]:
        assert main(["status", "--json", *flags]) == 0
        partitions = json.loads(capsys.readouterr().out)["partitions"]
        totals: dict[str, int] = {}
        for partition in partitions:
            for name, value in partition["turned_away"].items():
                totals[name] = totals.get(name, 0) + value
        return totals

    seen: list[dict[str, int]] = [{}]

    def as_expected() -> bool:
        seen[0] = counted()
        return seen[0] == expected

    wait_until(as_expected, 30, f"status to count {expected}", lambda: f"it counts {seen[0]}")
    assert main(["status", *flags]) == 0
    out = capsys.readouterr().out
    assert "turned away:" in out
    assert (
        f"partition 0 turned away: 1 ingress records refused, {exhausted[0]} commands refused"
        " RESOURCE_EXHAUSTED (backpressure), 1 replies dropped"
    ) in out, out
