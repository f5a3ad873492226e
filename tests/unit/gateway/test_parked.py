"""Parked ActivateJobs requests: woken by their job type's partition, and the drained marks that
keep an idle worker from asking the engine again until the log shows a job."""

from __future__ import annotations

import asyncio

from partita.gateway.waker import EVERY_TYPE, Parked


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
