"""Parked ActivateJobs requests: woken by their job type's partition, and the drained marks that
keep an idle worker from asking the engine again until the log shows a job; and which records of
the log's tail wake them."""

from __future__ import annotations

import asyncio

from partita.gateway.waker import EVERY_TYPE, Parked, activatable
from partita.protocol.headers import record_headers
from partita.protocol.intents import IncidentIntent, JobBatchIntent, JobIntent
from partita.protocol.records import Record, event
from partita.protocol.values import PUSH_WORKER, IncidentValue, JobBatchValue, JobValue
from tests.support.memory import CODEC, Message


def test_a_watch_is_woken_by_its_type_with_the_partition_to_ask() -> None:
    async def scenario() -> tuple[set[int], set[int], set[int]]:
        parked = Parked()
        pay, ship = parked.watch("pay"), parked.watch("ship")
        parked.wake([("pay", 2), ("other", 0)])
        woken_pay = await pay.wait(1.0)
        nothing = await ship.wait(0.01)
        parked.wake([(EVERY_TYPE, 1)])  # a resolved incident: any type on partition 1
        woken_ship = await ship.wait(1.0)
        pay.close()
        ship.close()
        return woken_pay, nothing, woken_ship

    assert asyncio.run(scenario()) == ({2}, set(), {1})


def test_a_closed_watch_holds_nothing() -> None:
    parked = Parked()
    parked.watch("pay").close()
    assert parked._watches == {}


def test_a_drained_pair_is_skipped_until_a_job_shows() -> None:
    parked = Parked()
    assert parked.may_have_jobs("pay", 0)
    parked.asking("pay", 0)
    parked.answered("pay", 0, drained=True)
    assert not parked.may_have_jobs("pay", 0)
    assert parked.may_have_jobs("pay", 1) and parked.may_have_jobs("ship", 0)
    parked.wake([("pay", 0)])
    assert parked.may_have_jobs("pay", 0)


def test_a_job_shown_while_the_activate_was_on_its_way_keeps_the_pair_undrained() -> None:
    parked = Parked()
    parked.asking("pay", 0)
    parked.wake([("pay", 0)])  # the engine made a job activatable after it read the ACTIVATE
    parked.answered("pay", 0, drained=True)
    assert parked.may_have_jobs("pay", 0)
    parked.asking("pay", 0)  # the next ACTIVATE takes it, and finds the partition empty
    parked.answered("pay", 0, drained=True)
    assert not parked.may_have_jobs("pay", 0)


def test_a_full_batch_is_not_drained_and_a_resolved_incident_undrains_its_partition() -> None:
    parked = Parked()
    parked.asking("pay", 0)
    parked.answered("pay", 0, drained=False)
    assert parked.may_have_jobs("pay", 0)
    for job_type in ("pay", "ship"):
        parked.asking(job_type, 0)
        parked.answered(job_type, 0, drained=True)
    parked.asking("pay", 1)
    parked.answered("pay", 1, drained=True)
    parked.wake([(EVERY_TYPE, 0)])
    assert parked.may_have_jobs("pay", 0) and parked.may_have_jobs("ship", 0)
    assert not parked.may_have_jobs("pay", 1)


def test_forgetting_undrains_everything() -> None:
    parked = Parked()
    parked.asking("pay", 0)
    parked.answered("pay", 0, drained=True)
    parked.asking("ship", 0)
    parked.forget()  # the reader missed records: nothing is known drained
    parked.answered("ship", 0, drained=True)
    assert parked.may_have_jobs("pay", 0) and parked.may_have_jobs("ship", 0)


# -- what the log's tail wakes ----------------------------------------------------------------


def log_message(partition: int, record: Record) -> Message:
    """A record of `<ns>.log` as the waker's consumer hands it over."""
    return Message("log", partition, 0, CODEC.encode(record), record_headers(record))


def job_event(intent: JobIntent, key: int, job_type: str) -> Record:
    return event(intent, JobValue(type=job_type), key=key)


def activated(worker: str, *keys: int) -> Record:
    jobs = tuple(JobValue(type="pay", worker=worker) for _ in keys)
    return event(
        JobBatchIntent.ACTIVATED,
        JobBatchValue(type="pay", worker=worker, job_keys=keys, jobs=jobs),
        key=-1,
    )


def woken(*messages: Message) -> list[tuple[str, int]]:
    return activatable(list(messages), CODEC)  # type: ignore[arg-type]


def test_jobs_made_activatable_wake_their_type_on_their_partition() -> None:
    assert woken(
        log_message(0, job_event(JobIntent.CREATED, 1, "pay")),
        log_message(0, job_event(JobIntent.CREATED, 2, "pay")),
        log_message(2, job_event(JobIntent.FAILED, 3, "ship")),
        log_message(1, job_event(JobIntent.COMPLETED, 4, "pay")),
        log_message(1, event(IncidentIntent.RESOLVED, IncidentValue(), key=5)),
    ) == [(EVERY_TYPE, 1), ("pay", 0), ("ship", 2)]


def test_a_job_pushed_where_it_was_made_activatable_wakes_nobody() -> None:
    assert woken(
        log_message(0, job_event(JobIntent.CREATED, 1, "pay")),
        log_message(0, activated(PUSH_WORKER, 1)),
        log_message(1, job_event(JobIntent.CREATED, 1, "pay")),  # another partition's key 1
    ) == [("pay", 1)]


def test_a_job_a_poll_activated_still_woke_its_type() -> None:
    """A poll's activation cannot be told from the engine's choice of what is left: only a push
    says the job went nowhere a long poll could ask for."""
    assert woken(
        log_message(0, job_event(JobIntent.CREATED, 1, "pay")),
        log_message(0, activated("a-worker", 1)),
    ) == [("pay", 0)]
