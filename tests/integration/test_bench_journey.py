"""`partita bench journey` (and the raw journey of `bench e2e`) against the test broker: every
journey is answered, and the relay did the engine's share of Kafka work for each command: a
copy carrying its ingress offset, the events of a one-task batch, and the job for a creation
or the reply for a completion, each committed, in the order of the commands, also when the
relay takes turns between two producers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from partita.bench import journey
from partita.config import Config
from partita.protocol.headers import INGRESS_OFFSET, header
from partita.protocol.intents import JobIntent
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from tests.support.worker_processes import committed_messages

pytestmark = pytest.mark.kafka

JOURNEYS, WARM_UP = 60, 5


@pytest.mark.parametrize("producers", [1, 2])
def test_every_journey_is_answered_after_the_engine_shaped_kafka_work(
    config: Config, producers: int
) -> None:
    said: list[str] = []
    result = journey.run(
        config,
        JOURNEYS,
        100.0,
        progress=said.append,
        warm_up=WARM_UP,
        keep_topics=True,
        producers=producers,
    )
    assert (result["completed"], result["unanswered"], result["producers"]) == (
        JOURNEYS,
        0,
        producers,
    )
    assert 0 < result["latency_ms_p50"] <= result["latency_ms_p95"] <= result["latency_ms_p99"]
    hops = result["hops_ms"]  # the timed journeys only, not the warm-up
    assert hops["instances"] == JOURNEYS
    parts = sum(hops[hop]["mean"] for hop in ("create_pickup", "job", "completion_pickup"))
    assert 0 <= parts <= hops["create_to_completed"]["mean"] + 0.2, hops
    assert hops["transactions_per_s"] > 0
    assert said == [
        f"raw journey: warming up ({WARM_UP} instances)...",
        f"raw journey: {JOURNEYS} instances at 100/s through Kafka alone...",
    ]

    bench = replace(config, namespace=result["namespace"])
    topics = journey.Topics.of(bench.namespace)
    creations = 2 * (JOURNEYS + WARM_UP)  # a create and a job completion per journey
    log = committed_messages(bench, topics.log, 0)
    copies = [m for _, m in log if header(m.headers(), INGRESS_OFFSET) is not None]
    # in log order: a batch is written once the one before it is delivered, whichever
    # producer's turn it is
    assert [int(header(m.headers(), INGRESS_OFFSET) or b"-1") for m in copies] == list(
        range(creations)
    )
    assert len(log) == creations * (1 + journey.EVENTS_PER_BATCH)
    jobs = committed_messages(bench, topics.jobs, 0)
    assert len(jobs) == JOURNEYS + WARM_UP
    assert {record.intent for record, _ in jobs} == {JobIntent.CREATED}
    replies = committed_messages(bench, topics.replies, 0)
    assert {header(m.headers(), journey.CORRELATION) for _, m in replies} == {
        str(n).encode() for n in range(JOURNEYS + WARM_UP)
    }
    assert {record.intent for record, _ in replies} == {Creation.CREATED}
