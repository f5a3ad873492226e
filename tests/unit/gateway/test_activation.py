"""ActivateJobs in the gateway's command layer, with a fake engine that activates two jobs per
ACTIVATE: jobs the caller did not take (its client left while they were on their way) go back
to the engine with JOB YIELD at once; jobs it took stay its own; jobs pushed to the gateway
while no request waited go to the next request without a command."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from partita.client.commands import Request
from partita.gateway.activation import JobActivation
from partita.protocol.intents import JobBatchIntent
from partita.protocol.records import Record, event
from partita.protocol.values import JobBatchValue, JobValue


class TwoJobsEachTime:
    """An engine that answers every ACTIVATE with two new jobs."""

    def __init__(self) -> None:
        self.connection = SimpleNamespace(partition_count=1)
        self.timeout = 5.0
        self.next_key = 1
        self.requests = 0

    async def request(self, request: Request, timeout: float | None = None) -> Record:
        self.requests += 1
        keys = (self.next_key, self.next_key + 1)
        self.next_key += 2
        batch = JobBatchValue(type="t", job_keys=keys, jobs=(JobValue(type="t"),) * 2)
        return event(JobBatchIntent.ACTIVATED, batch, key=-1)


class PushedHere:
    """The job push as the gateway sees it: jobs held for the next request, and jobs given
    back to the engine."""

    def __init__(self, held: list[int] | None = None) -> None:
        self.keys: list[int] = []
        self._held = [(key, JobValue(type="t", deadline=-1)) for key in held or []]

    def held(self, job_type: str, count: int) -> list[tuple[int, JobValue]]:
        taken, self._held = self._held[:count], self._held[count:]
        return taken

    def give_back(self, key: int) -> None:
        self.keys.append(key)


def activation(max_jobs: int, pushed: PushedHere | None = None) -> tuple[Any, PushedHere]:
    given = pushed or PushedHere()
    jobs = JobActivation(TwoJobsEachTime(), None, given)  # type: ignore[arg-type]
    batches = jobs.activate_jobs("t", worker="w", timeout_ms=1000, max_jobs=max_jobs)
    return batches, given


def test_jobs_in_a_batch_the_caller_abandons_go_back_to_the_engine() -> None:
    async def main() -> list[int]:
        batches, given = activation(max_jobs=5)
        first = await anext(batches)
        assert [key for key, _job in first] == [1, 2]
        await batches.aclose()  # the client left while this batch was being sent
        return given.keys

    assert asyncio.run(main()) == [1, 2]


def test_jobs_the_caller_took_stay_its_own() -> None:
    async def main() -> tuple[list[int], list[int]]:
        batches, given = activation(max_jobs=2)
        taken = [key async for batch in batches for key, _job in batch]
        return taken, given.keys

    assert asyncio.run(main()) == ([1, 2], [])


def test_jobs_pushed_while_no_request_waited_go_to_the_next_one_without_a_command() -> None:
    async def main() -> tuple[list[tuple[int, str]], int]:
        engine = TwoJobsEachTime()
        jobs = JobActivation(engine, None, PushedHere(held=[7, 8, 9]))  # type: ignore[arg-type]
        batches = jobs.activate_jobs("t", worker="w", timeout_ms=1000, max_jobs=2)
        taken = [(key, job.worker) async for batch in batches for key, job in batch]
        jobs._restamps.pop(7).cancel()
        jobs._restamps.pop(8).cancel()
        return taken, engine.requests

    assert asyncio.run(main()) == ([(7, "w"), (8, "w")], 0)
