"""Job streams (StreamActivatedJobs) fed by Partita's job push.

While at least one stream of a job type is open, the gateway is one of that type's workers: it
consumes `<ns>.jobs.<type>` in the group `<ns>.workers.<type>` (with `partita.client.JobWorker`s
and other gateways, which share the topic's partitions), so the engine pushes the type's jobs,
and it hands each job to the type's open streams in turn. A job it cannot hand to anyone (the
last stream closed, a stream's client went away with jobs still queued for it) goes back to the
engine at once with JOB YIELD, activatable again for pollers, instead of waiting out its
deadline. When the last stream of a type closes, the gateway leaves the group, and the engine
stops pushing the type within a few seconds (jobs it pushed meanwhile wait in the topic for the
next worker of the type, or their deadline).

A job whose deadline has already passed is skipped: the engine times it out and pushes it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Message

from partita.client import commands
from partita.client.aio import AsyncClient
from partita.client.errors import CommandRejectedError, ReplyTimeoutError
from partita.config import Config
from partita.log.admin import admin_client
from partita.log.clients import close_consumer, consume_available, new_consumer
from partita.log.security import KafkaAccess
from partita.log.topics import apply_topics, job_topic_spec
from partita.protocol.codec import RecordCodec
from partita.protocol.values import JobBatchValue, JobValue

_LOG = logging.getLogger("partita.gateway")

ActivatedJob = tuple[int, JobValue]


@dataclass(eq=False)
class JobStream:
    """One open StreamActivatedJobs call: the jobs handed to it, in order."""

    job_type: str
    worker: str
    queue: asyncio.Queue[ActivatedJob] = field(default_factory=asyncio.Queue)


class _Feed:
    """The consumer of one job type's topic, on a thread of its own, and its open streams."""

    def __init__(self, streams: JobStreams, job_type: str) -> None:
        self.streams = streams
        self.job_type = job_type
        self.open: list[JobStream] = []
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
        self._closing.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

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
        """On the loop: each job to the next open stream, or back to the engine."""
        for job in jobs:
            if self.open:
                stream = self.open[next(self._turn) % len(self.open)]
                stream.queue.put_nowait(job)
            else:
                self.streams.give_back(job[0])


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

    async def stream(
        self, job_type: str, worker: str, narrow: Callable[[JobValue], JobValue]
    ) -> AsyncIterator[ActivatedJob]:
        """The jobs of `job_type` handed to this stream, until the caller stops iterating;
        jobs queued for it then go back to the engine."""
        await self._ensure_topic(job_type)
        stream = JobStream(job_type, worker)
        feed = self._feeds.get(job_type)
        if feed is None:
            feed = self._feeds[job_type] = _Feed(self, job_type)
            feed.start()
        feed.open.append(stream)
        try:
            while True:
                key, job = await stream.queue.get()
                yield key, narrow(job)
        finally:
            feed.open.remove(stream)
            while not stream.queue.empty():
                self.give_back(stream.queue.get_nowait()[0])
            if not feed.open and self._feeds.get(job_type) is feed:
                del self._feeds[job_type]
                await feed.stop()

    async def close(self) -> None:
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

    def retime(self, key: int, timeout_ms: int) -> None:
        """JOB UPDATE_TIMEOUT for `key`, without waiting for its reply."""
        task = self.loop.create_task(self._answer(commands.update_job_timeout(key, timeout_ms)))
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
