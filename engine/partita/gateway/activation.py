"""ActivateJobs and StreamActivatedJobs as Zeebe's gateway serves them, on Partita's engine:
long polls that park without writing to the log (`partita.gateway.waker`), and jobs the engine
pushed (`partita.gateway.streams`) handed to requests and made theirs. `Operations` (the
command layer both APIs call) hands these requests here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

from msgspec import structs

from partita.client import commands
from partita.client.aio import AsyncClient
from partita.client.errors import CommandRejectedError, ReplyTimeoutError
from partita.errors import PartitaError
from partita.gateway.arguments import narrowed, tenant
from partita.gateway.errors import GatewayError, Status, invalid, rejected, unimplemented
from partita.gateway.streams import JobStreams
from partita.gateway.waker import Parked, Watch
from partita.protocol.values import JobBatchValue, JobValue

LONG_POLL_MS = 10_000
"""How long an ActivateJobs request with no `requestTimeout` (0) waits for a job, as Zeebe's
gateway (`longPolling.timeout`)."""
MAX_LONG_POLL_MS = 3_600_000
_MIN_ACTIVATE_WAIT_S = 2.0
RESTAMP_AFTER_S = 1.0
"""A pushed job handed to a request and not answered within this long is made the request's
worker's in the engine (JOB UPDATE_TIMEOUT)."""
MAX_JOBS = 10_000
"""The most jobs one ActivateJobs request may ask for."""

ActivatedJob = tuple[int, JobValue]


class JobActivation:
    """The job requests of one gateway: its long polls, its streams, and the pushed jobs it
    handed out and has not seen answered."""

    def __init__(
        self,
        client: AsyncClient,
        parked: Parked | None = None,
        streams: JobStreams | None = None,
    ) -> None:
        self.client = client
        self.parked = parked
        self.streams = streams
        self._restamps: dict[int, asyncio.TimerHandle] = {}
        self.partition_count = client.connection.partition_count
        self._next_partition = 0

    async def activate_jobs(
        self,
        job_type: str,
        *,
        worker: str,
        timeout_ms: int,
        max_jobs: int,
        fetch_variables: Sequence[str] = (),
        request_timeout_ms: int = 0,
        tenant_ids: Sequence[str] = (),
    ) -> AsyncIterator[list[ActivatedJob]]:
        """The jobs activated for one request, a batch per partition that had some.

        Long polling, as Zeebe's gateway does it: one round over the partitions (starting
        where the last request started, so requests share them), asking each for what is
        left of `max_jobs`; when a round activates nothing the request waits until the log
        shows a job of its type becoming activatable, then asks that partition, until
        `request_timeout_ms` (0: 10 s; negative: no waiting) has passed. Waiting sends no
        command: an idle worker writes nothing to the log. While it waits, the gateway also
        takes the type's pushed jobs (`JobStreams.take`): a job pushed in the transaction
        that created it reaches a parked poll without an activation's round trip, and pushed
        jobs that came while no request waited go to the next one before any round. A batch
        the caller abandons (its client left while it was sent) goes back (`_give_back`)."""
        _check_activation(job_type, max_jobs, timeout_ms, request_timeout_ms, tenant_ids)
        batches = self._activation(
            job_type, worker, timeout_ms, max_jobs, fetch_variables, request_timeout_ms
        )
        try:
            async for batch in batches:
                try:
                    yield batch
                except BaseException:  # the caller stopped at this batch: see _give_back
                    self._give_back(batch)
                    raise
        finally:
            await batches.aclose()

    async def _activation(  # noqa: PLR0917
        self,
        job_type: str,
        worker: str,
        timeout_ms: int,
        max_jobs: int,
        fetch_variables: Sequence[str],
        request_timeout_ms: int,
    ) -> AsyncGenerator[list[ActivatedJob]]:
        """`activate_jobs`'s batches, checked arguments given."""
        held = self.streams.held(job_type, max_jobs) if self.streams is not None else []
        if held:  # pushed while no request waited: handed over with no command
            yield self._handed(held, fetch_variables, timeout_ms, worker)
            return
        wait_ms = LONG_POLL_MS if request_timeout_ms == 0 else request_timeout_ms
        start = self._next_partition
        self._next_partition = (start + 1) % self.partition_count
        partitions = [(start + i) % self.partition_count for i in range(self.partition_count)]
        remaining = max_jobs
        loop_time = asyncio.get_running_loop().time
        deadline = loop_time() + max(wait_ms, 0) / 1000
        watch = self.parked.watch(job_type) if self.parked is not None else None
        try:
            while True:
                for partition in partitions:
                    if self.parked is not None and not self.parked.may_have_jobs(
                        job_type, partition
                    ):
                        continue
                    # a partition between owners answers late: the request waits for it at
                    # most until its own end (and a little), never failing for it
                    wait = max(_MIN_ACTIVATE_WAIT_S, deadline - loop_time() + _MIN_ACTIVATE_WAIT_S)
                    batch = await self._activate(
                        job_type, partition, worker, remaining, timeout_ms, wait
                    )
                    if batch is None:
                        continue  # the partition is moving: the next round asks again
                    if batch.jobs:
                        remaining -= len(batch.jobs)
                        yield [
                            (key, narrowed(job, fetch_variables))
                            for key, job in zip(batch.job_keys, batch.jobs, strict=True)
                        ]
                    if remaining <= 0:
                        return
                if remaining < max_jobs or watch is None:
                    return
                left = deadline - loop_time()
                if left <= 0:
                    return
                pushed, woken = await self._park(job_type, remaining, watch, left)
                if pushed:
                    yield self._handed(pushed, fetch_variables, timeout_ms, worker)
                    return
                if not woken:
                    return
                partitions = sorted(woken)
        finally:
            if watch is not None:
                watch.close()

    async def _park(
        self, job_type: str, count: int, watch: Watch, left: float
    ) -> tuple[list[ActivatedJob], set[int]]:
        """Wait up to `left` seconds for pushed jobs (up to `count`, handed over by the
        type's feed) or for the log to show activatable ones (the partitions to ask)."""
        taker = await self.streams.take(job_type, count) if self.streams is not None else None
        if taker is None:
            return [], await watch.wait(left)
        assert self.streams is not None
        try:
            woken: set[int] = set()
            if not taker.ready.is_set():
                waiting = asyncio.ensure_future(watch.wait(left))
                ready = asyncio.ensure_future(taker.ready.wait())
                try:
                    done, _ = await asyncio.wait(
                        {waiting, ready}, timeout=left, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:  # cancelled too: neither is left pending
                    waiting.cancel()
                    ready.cancel()
                if waiting in done:
                    woken = waiting.result()
            pushed = list(taker.jobs)
        except BaseException:  # cancelled (the client went away): its jobs go to others
            self.streams.release(job_type, taker, keep=0)
            raise
        self.streams.release(job_type, taker, keep=len(pushed))
        return pushed, woken

    async def stream_jobs(
        self,
        job_type: str,
        *,
        worker: str,
        timeout_ms: int,
        fetch_variables: Sequence[str] = (),
        tenant_ids: Sequence[str] = (),
    ) -> AsyncIterator[ActivatedJob]:
        """The jobs of `job_type` pushed to this gateway and handed to this stream, one at a
        time, until the caller stops. The engine pushes with its own deadline
        (PARTITA_JOB_PUSH_TIMEOUT_MS); a stream's other `timeout_ms` is applied to each job
        it gets (`_retimed`)."""
        if not job_type:
            raise invalid("Expected a job type, but it is empty")
        if timeout_ms < 0:
            raise invalid(f"Expected a job timeout of zero or more, but it was {timeout_ms}")
        for tenant_id in tenant_ids:
            tenant(tenant_id, "tenantIds")
        if self.streams is None:
            raise unimplemented("StreamActivatedJobs", "this gateway serves no job streams")
        try:
            async for key, job in self.streams.stream(
                job_type, worker, lambda job: narrowed(job, fetch_variables)
            ):
                yield key, self._retimed(key, job, timeout_ms, worker)
        except PartitaError as error:  # the job topic is missing and cannot be made here
            raise GatewayError(
                Status.FAILED_PRECONDITION,
                f"cannot stream jobs of type '{job_type}': {error}. An operator creates the"
                f" job topic with `partita topics apply --job-type {job_type}`",
            ) from None

    def _handed(
        self,
        pushed: list[ActivatedJob],
        fetch_variables: Sequence[str],
        timeout_ms: int,
        worker: str,
    ) -> list[ActivatedJob]:
        """Pushed jobs as one request gets them (`_retimed`)."""
        return [
            (key, self._retimed(key, narrowed(job, fetch_variables), timeout_ms, worker))
            for key, job in pushed
        ]

    def _retimed(self, key: int, job: JobValue, timeout_ms: int, worker: str) -> JobValue:
        """A pushed job carries the engine's push deadline and worker name (`partita.push`);
        handed to a request, it is that request's: the job says the request's deadline and
        worker, and unless it is answered through this gateway within `RESTAMP_AFTER_S`, JOB
        UPDATE_TIMEOUT tells the engine (the request's timeout, the push's when it asked for
        none, counted from the handing over; and the worker). Most jobs are answered sooner and
        cost the engine no command; the deadline matters for the ones that run long."""
        if self.streams is None:
            return job
        now = int(time.time() * 1000)
        timeout = timeout_ms if timeout_ms > 0 else max(job.deadline - now, 1)
        streams = self.streams

        def restamp() -> None:
            self._restamps.pop(key, None)
            streams.retime(key, max(timeout - int(RESTAMP_AFTER_S * 1000), 1), worker)

        self._restamps[key] = asyncio.get_running_loop().call_later(RESTAMP_AFTER_S, restamp)
        return structs.replace(job, deadline=now + timeout, worker=worker)

    def _give_back(self, jobs: list[ActivatedJob]) -> None:
        """Jobs activated for a request that did not take them (its client left while they
        were on their way: the caller stopped at their batch) go back to the engine with JOB
        YIELD, activatable at once, rather than waiting out their deadline. Zeebe's gateway
        does the same for a response it could not send."""
        if self.streams is None:
            return  # no job push here: they wait for their deadline
        for key, _job in jobs:
            self.answered(key)
            self.streams.give_back(key)

    def answered(self, key: int) -> None:
        """The job was answered through this gateway: no restamp for it."""
        pending = self._restamps.pop(key, None)
        if pending is not None:
            pending.cancel()

    async def _activate(  # noqa: PLR0917
        self,
        job_type: str,
        partition: int,
        worker: str,
        count: int,
        timeout_ms: int,
        wait_s: float,
    ) -> JobBatchValue | None:
        """One ACTIVATE on `partition`; None when no reply came in time."""
        request = commands.activate_jobs(job_type, partition, worker, count, timeout_ms)
        if self.parked is not None:
            self.parked.asking(job_type, partition)
        batch: JobBatchValue | None = None
        try:
            value = (await self.client.request(request, min(wait_s, self.client.timeout))).value
            assert isinstance(value, JobBatchValue)
            batch = value
            return batch
        except ReplyTimeoutError:
            return None
        except CommandRejectedError as error:
            raise rejected(error) from None
        finally:
            if self.parked is not None:
                drained = batch is not None and len(batch.jobs) < count
                self.parked.answered(job_type, partition, drained)


def _check_activation(
    job_type: str,
    max_jobs: int,
    timeout_ms: int,
    request_timeout_ms: int,
    tenant_ids: Sequence[str],
) -> None:
    """An ActivateJobs request's arguments, refused as Zeebe's gateway refuses them."""
    if not job_type:
        raise invalid("Expected a job type, but it is empty")
    if not 0 < max_jobs <= MAX_JOBS:
        raise invalid(f"maxJobsToActivate must be between 1 and {MAX_JOBS}, not {max_jobs}")
    if timeout_ms <= 0:
        raise invalid(f"Expected a job timeout greater than zero, but it was {timeout_ms}")
    if request_timeout_ms > MAX_LONG_POLL_MS:
        raise invalid(f"requestTimeout must be at most {MAX_LONG_POLL_MS} ms")
    for tenant_id in tenant_ids:
        tenant(tenant_id, "tenantIds")
