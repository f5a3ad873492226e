"""The job push, served to Zeebe's clients: job streams (StreamActivatedJobs) and parked
ActivateJobs long polls.

While a job type has an open stream or a parked long poll here, the gateway is one of that
type's workers: it consumes `<ns>.jobs.<type>` in the group `<ns>.workers.<type>` (with
`partita.client.JobWorker`s and other gateways, which share the topic's partitions), so the
engine pushes the type's jobs, activated in the transaction that creates them, and the gateway
hands each to the type's open streams in turn, else to its parked long polls (oldest first, at
most what each asked for), else holds it half a second for the next request. A job nobody
takes goes back to the engine with JOB YIELD, activatable again for pollers, instead of waiting
out its deadline. A type's consumer stays in the group a while after its last request (long
polls come back at once), then leaves; the engine stops pushing the type within seconds, and
jobs it pushed meanwhile wait in the topic for the type's next worker, or their deadline.

A job whose deadline has already passed is skipped: the engine times it out and pushes it again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Message

from partita.client import commands
from partita.client.aio import AsyncClient
from partita.client.errors import CommandRejectedError, ReplyTimeoutError
from partita.config import Config
from partita.errors import PartitaError
from partita.log.admin import admin_client
from partita.log.clients import close_consumer, consume_available, new_consumer
from partita.log.security import KafkaAccess
from partita.log.topics import apply_topics, job_topic_spec
from partita.protocol.codec import RecordCodec
from partita.protocol.values import JobBatchValue, JobValue

_LOG = logging.getLogger("partita.gateway")

ActivatedJob = tuple[int, JobValue]
HOLD_S = 0.5
"""How long a pushed job that no request waits for is held for the next one."""
LINGER_S = 3.0
"""How long a type's consumer stays in the group after its last stream or long poll: long
enough for a poller's next request, short enough that jobs nobody asks for stop coming (each
would be held, given back and pushed again at the type's next push)."""


@dataclass(eq=False)
class JobStream:
    """One open StreamActivatedJobs call: the jobs handed to it, in order."""

    job_type: str
    worker: str
    queue: asyncio.Queue[ActivatedJob] = field(default_factory=asyncio.Queue)


@dataclass(eq=False)
class Taker:
    """One parked ActivateJobs request: up to `count` pushed jobs, handed over once."""

    count: int
    jobs: list[ActivatedJob] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)


class _Feed:
    """The consumer of one job type's topic, on a thread of its own, and who takes its jobs."""

    def __init__(self, streams: JobStreams, job_type: str) -> None:
        self.streams = streams
        self.job_type = job_type
        self.open: list[JobStream] = []
        self.takers: list[Taker] = []
        self.held: collections.deque[tuple[float, ActivatedJob]] = collections.deque()
        self.last_used = time.monotonic()
        self.stopped = False
        self._turn = itertools.count()
        self._codec = RecordCodec()
        self._closing = threading.Event()
        self._consumer: Consumer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        config = self.streams.config
        self._consumer = new_consumer(
            self.streams.access,
            {
                "group.id": f"{config.namespace}.workers.{self.job_type}",
                "client.id": f"{self.streams.name}.{self.job_type}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "fetch.wait.max.ms": 10,
                "partition.assignment.strategy": "cooperative-sticky",
            },
        )
        self._consumer.subscribe([config.job_topic(self.job_type)])
        self._thread = threading.Thread(
            target=self._read, name=f"partita-stream-{self.job_type}", daemon=True
        )
        self._thread.start()

    async def stop(self) -> None:
        """Leave the group. Jobs it held, or read while leaving, go back to the engine."""
        self.stopped = True
        self._closing.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        while self.held:
            self.streams.give_back(self.held.popleft()[1][0])

    def _read(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        try:
            while not self._closing.is_set():
                try:
                    messages = consume_available(consumer, 100, 0.1)
                except Exception:  # logged; the stream goes on reading
                    _LOG.exception("the job stream of %s could not read its topic", self.job_type)
                    time.sleep(0.5)
                    continue
                jobs = [job for job in map(self._job, messages) if job is not None]
                if jobs:
                    self.streams.loop.call_soon_threadsafe(self.deliver, jobs)
        finally:
            close_consumer(consumer)  # leaves the group: the engine stops pushing the type

    def _job(self, message: Message) -> ActivatedJob | None:
        data = message.value()
        if message.error() is not None or data is None:
            return None
        try:
            batch = self._codec.decode(data).value
        except Exception:  # the engine's own records; an unreadable one is skipped
            _LOG.warning("skipped an unreadable record on %s", message.topic())
            return None
        if not isinstance(batch, JobBatchValue) or len(batch.jobs) != 1:
            return None
        key, job = batch.job_keys[0], batch.jobs[0]
        if 0 <= job.deadline < time.time() * 1000:
            return None  # timed out already: the engine pushes it again
        return key, job

    def deliver(self, jobs: list[ActivatedJob]) -> None:
        """On the loop: each job to the next open stream, else to the oldest parked long poll
        with room, else held for the next request (`expire` gives it back)."""
        now = time.monotonic()
        for job in jobs:
            if self.stopped:  # read while leaving the group: nobody here will take it
                self.streams.give_back(job[0])
            elif self.open:
                stream = self.open[next(self._turn) % len(self.open)]
                stream.queue.put_nowait(job)
            elif self.takers:
                taker = self.takers[0]
                taker.jobs.append(job)
                taker.ready.set()
                if len(taker.jobs) >= taker.count:
                    self.takers.pop(0)
            else:
                self.held.append((now, job))

    def take_held(self, count: int) -> list[ActivatedJob]:
        taken: list[ActivatedJob] = []
        while self.held and len(taken) < count:
            taken.append(self.held.popleft()[1])
        return taken

    def expire(self, now: float) -> None:
        """Held jobs nobody took within `HOLD_S` go back to the engine."""
        while self.held and now - self.held[0][0] > HOLD_S:
            self.streams.give_back(self.held.popleft()[1][0])

    @property
    def idle(self) -> bool:
        return not self.open and not self.takers and not self.held


class JobStreams:
    def __init__(self, config: Config, access: KafkaAccess, client: AsyncClient, name: str) -> None:
        self.config = config
        self.access = access
        self.client = client
        self.name = name
        self.loop = asyncio.get_running_loop()
        self._feeds: dict[str, _Feed] = {}
        self._topics: set[str] = set()
        self._yields: set[asyncio.Task[None]] = set()
        self._janitor: asyncio.Task[None] | None = None

    async def _feed(self, job_type: str) -> _Feed:
        """The type's feed, started (with its topic made) when it has none."""
        await self._ensure_topic(job_type)
        feed = self._feeds.get(job_type)
        if feed is None:
            feed = self._feeds[job_type] = _Feed(self, job_type)
            feed.start()
            if self._janitor is None:
                self._janitor = self.loop.create_task(self._sweep())
        feed.last_used = time.monotonic()
        return feed

    async def _sweep(self) -> None:
        """Every tenth of a second: give back held jobs nobody took, and stop the feeds of
        types nobody asked for in `LINGER_S`."""
        while True:
            await asyncio.sleep(0.1)
            now = time.monotonic()
            for job_type, feed in list(self._feeds.items()):
                feed.expire(now)
                if feed.open or feed.takers:
                    feed.last_used = now
                elif feed.idle and now - feed.last_used > LINGER_S:
                    del self._feeds[job_type]
                    await feed.stop()

    async def take(self, job_type: str, count: int) -> Taker | None:
        """Park a long poll of `job_type` for up to `count` pushed jobs (held ones first);
        None when the type's job topic is missing and cannot be made here (the poll then
        waits for activatable jobs only). `release` it when done."""
        try:
            feed = await self._feed(job_type)
        except (PartitaError, KafkaException):
            return None
        taker = Taker(count)
        taker.jobs = feed.take_held(count)
        if taker.jobs:
            taker.ready.set()
        if len(taker.jobs) < count:
            feed.takers.append(taker)
        return taker

    def held(self, job_type: str, count: int) -> list[ActivatedJob]:
        """Up to `count` of the type's pushed jobs that no request was waiting for (oldest
        first), taken at once: a long poll gets them without a command."""
        feed = self._feeds.get(job_type)
        if feed is None:
            return []
        feed.last_used = time.monotonic()
        return feed.take_held(count)

    def release(self, job_type: str, taker: Taker, keep: int) -> None:
        """The poll is done with `taker`, having used its first `keep` jobs: the rest go to
        the next request (held) or back to the engine."""
        feed = self._feeds.get(job_type)
        if feed is not None and taker in feed.takers:
            feed.takers.remove(taker)
        rest, taker.jobs = taker.jobs[keep:], taker.jobs[:keep]
        if feed is not None and rest:
            feed.deliver(rest)
        else:
            for key, _job in rest:
                self.give_back(key)

    async def stream(
        self, job_type: str, worker: str, narrow: Callable[[JobValue], JobValue]
    ) -> AsyncIterator[ActivatedJob]:
        """The jobs of `job_type` handed to this stream, until the caller stops iterating;
        jobs queued for it then go back to the engine."""
        feed = await self._feed(job_type)
        stream = JobStream(job_type, worker)
        feed.open.append(stream)
        for held in feed.take_held(len(feed.held)):
            stream.queue.put_nowait(held)
        try:
            while True:
                key, job = await stream.queue.get()
                yield key, narrow(job)
        finally:
            feed.open.remove(stream)
            feed.last_used = time.monotonic()
            while not stream.queue.empty():
                self.give_back(stream.queue.get_nowait()[0])

    async def close(self) -> None:
        if self._janitor is not None:
            self._janitor.cancel()
        for feed in list(self._feeds.values()):
            await feed.stop()
        self._feeds.clear()
        if self._yields:
            await asyncio.wait(self._yields, timeout=10)

    def give_back(self, key: int) -> None:
        """JOB YIELD for `key`, without waiting for its reply."""
        task = self.loop.create_task(self._yield(key))
        self._yields.add(task)
        task.add_done_callback(self._yields.discard)

    def retime(self, key: int, timeout_ms: int, worker: str) -> None:
        """JOB UPDATE_TIMEOUT for `key` (its timeout and worker), without waiting for the
        reply."""
        request = commands.update_job_timeout(key, timeout_ms, worker)
        task = self.loop.create_task(self._answer(request))
        self._yields.add(task)
        task.add_done_callback(self._yields.discard)

    async def _answer(self, request: commands.Request) -> None:
        with contextlib.suppress(CommandRejectedError, ReplyTimeoutError):
            # rejected: the job was answered first (its worker was quick); no reply: the push
            # deadline holds
            await self.client.request(request)

    async def _yield(self, key: int) -> None:
        with contextlib.suppress(CommandRejectedError, ReplyTimeoutError):
            # rejected: completed or timed out meanwhile; no reply: its deadline still holds
            await self.client.request(commands.yield_job(key))

    async def _ensure_topic(self, job_type: str) -> None:
        """The job topic must exist; on a cluster that lets the gateway create topics, a
        missing one is made here (as a Python JobWorker makes its own)."""
        if job_type in self._topics:
            return
        topic = self.config.job_topic(job_type)

        def make() -> None:
            admin = admin_client(self.access)
            metadata = admin.list_topics(timeout=10)
            if topic not in metadata.topics:
                partitions = len(metadata.topics[self.config.log_topic].partitions)
                actual = self.config.with_overrides(partitions=partitions)
                apply_topics(admin, [job_topic_spec(actual, job_type)])

        await asyncio.to_thread(make)
        self._topics.add(job_type)
