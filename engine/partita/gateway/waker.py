"""Wakes parked ActivateJobs requests when the log shows a job of their type become activatable.

A long-polling request that found no job parks here instead of asking the engine again: one
thread reads the tail of `<ns>.log` (read_committed, no consumer group, from its end when the
gateway started) and filters by header, so only the few JOB events that make a job activatable
(CREATED, FAILED, TIMED_OUT, RECURRED_AFTER_BACKOFF, RETRIES_UPDATED, YIELDED) are decoded, for
their job type. Each wakes the requests watching that type with the partition to ask. An
INCIDENT RESOLVED (a job's incident may make it activatable again) wakes every watch on its
partition. A job pushed in the transaction that made it activatable wakes nobody (`activatable`).
Nothing is written: an idle worker costs the log nothing.

A watch is taken before a request's first round of ACTIVATE commands, so a job that becomes
activatable while the round runs wakes it too.

The waker also remembers which (job type, partition) an ACTIVATE found drained (fewer jobs than
asked for) with no activatable job shown since: the next requests skip it, so a worker polling a
type nobody creates asks each partition once, and then writes nothing at all. A job that became
activatable while that ACTIVATE was on its way keeps it undrained. A consumer error forgets
every drained mark (records could have been missed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import OrderedDict

from confluent_kafka import OFFSET_END, Message, TopicPartition

from partita.log.clients import close_consumer, consume_available, new_consumer
from partita.log.security import KafkaAccess
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import EVENT, INTENT, RECORD_TYPE, VALUE_TYPE
from partita.protocol.values import PUSH_WORKER, JobBatchValue, JobValue

_LOG = logging.getLogger("partita.gateway")
_ACTIVATABLE = {
    b"CREATED",
    b"FAILED",
    b"TIMED_OUT",
    b"RECURRED_AFTER_BACKOFF",
    b"RETRIES_UPDATED",
    b"YIELDED",
}
EVERY_TYPE = ""
_MAX_DRAINED = 100_000
"""Drained marks kept at most (the oldest go first: that pair is asked again)."""

Key = tuple[str, int]


class Watch:
    """One parked request's view: the partitions where a job of its type may be waiting."""

    def __init__(self, parked: Parked, job_type: str) -> None:
        self._parked = parked
        self.job_type = job_type
        self.partitions: set[int] = set()
        self._event = asyncio.Event()

    def wake(self, partition: int) -> None:
        self.partitions.add(partition)
        self._event.set()

    async def wait(self, timeout: float) -> set[int]:
        """The partitions to ask, once any is known; empty after `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # not wait_for: see AsyncClient._send
                await self._event.wait()
        woken, self.partitions = self.partitions, set()
        self._event.clear()
        return woken

    def close(self) -> None:
        self._parked.unwatch(self)


class Parked:
    """The parked requests and the drained marks. Used on the event loop only: the log reader
    hands it what it found with `call_soon_threadsafe`."""

    def __init__(self) -> None:
        self._watches: dict[str, set[Watch]] = {}
        self._drained: OrderedDict[Key, None] = OrderedDict()
        self._asking: dict[Key, int] = {}
        self._dirty: set[Key] = set()

    def watch(self, job_type: str) -> Watch:
        watch = Watch(self, job_type)
        self._watches.setdefault(job_type, set()).add(watch)
        return watch

    def unwatch(self, watch: Watch) -> None:
        watches = self._watches.get(watch.job_type)
        if watches is not None:
            watches.discard(watch)
            if not watches:
                del self._watches[watch.job_type]

    def may_have_jobs(self, job_type: str, partition: int) -> bool:
        return (job_type, partition) not in self._drained

    def asking(self, job_type: str, partition: int) -> None:
        """An ACTIVATE for the pair is on its way (`answered` follows)."""
        key = (job_type, partition)
        self._asking[key] = self._asking.get(key, 0) + 1

    def answered(self, job_type: str, partition: int, drained: bool) -> None:
        """Its reply came (or none in time): `drained` when it activated fewer jobs than it
        asked for, and no job of the pair became activatable while it was on its way."""
        key = (job_type, partition)
        if drained and key not in self._dirty:
            self._drained[key] = None
            self._drained.move_to_end(key)
            if len(self._drained) > _MAX_DRAINED:
                self._drained.popitem(last=False)
        left = self._asking.get(key, 1) - 1
        if left > 0:
            self._asking[key] = left
        else:
            self._asking.pop(key, None)
            self._dirty.discard(key)

    def forget(self) -> None:
        """Records may have been missed: no pair is known to be drained any more."""
        self._drained.clear()
        self._dirty.update(self._asking)

    def wake(self, woken: list[Key]) -> None:
        """Jobs of these (type, partition) pairs may be activatable (`EVERY_TYPE`: any type)."""
        for job_type, partition in woken:
            if job_type == EVERY_TYPE:
                for key in [k for k in self._drained if k[1] == partition]:
                    del self._drained[key]
                self._dirty.update(k for k in self._asking if k[1] == partition)
                watches = [w for ws in self._watches.values() for w in ws]
            else:
                key = (job_type, partition)
                self._drained.pop(key, None)
                if key in self._asking:
                    self._dirty.add(key)
                watches = list(self._watches.get(job_type, ()))
            for watch in watches:
                watch.wake(partition)


class JobWaker:
    """Reads the log's tail on a thread of its own and tells `parked` what it found."""

    def __init__(
        self, access: KafkaAccess, log_topic: str, partitions: int, parked: Parked
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.parked = parked
        self._codec = RecordCodec()
        self._consumer = new_consumer(
            access,
            {
                "group.id": f"{log_topic}.gateway-waker",  # never joins: assign only
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 10,
                # truncated past our position: read what is left rather than skip to the end
                "auto.offset.reset": "earliest",
            },
        )
        self._consumer.assign([TopicPartition(log_topic, p, OFFSET_END) for p in range(partitions)])
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._read, name="partita-job-waker", daemon=True)
        self._thread.start()

    async def close(self) -> None:
        self._closing.set()
        await asyncio.to_thread(self._thread.join)
        close_consumer(self._consumer)

    def _read(self) -> None:
        while not self._closing.is_set():
            try:
                messages = consume_available(self._consumer, 500, 0.1)
            except Exception:  # a consumer error is logged and the reading goes on
                _LOG.exception("the job waker could not read the log")
                self._loop.call_soon_threadsafe(self.parked.forget)
                continue
            if any(m.error() is not None for m in messages):
                self._loop.call_soon_threadsafe(self.parked.forget)
            woken = activatable(messages, self._codec)
            if woken:
                self._loop.call_soon_threadsafe(self.parked.wake, woken)


def activatable(messages: list[Message], codec: RecordCodec) -> list[Key]:
    """The (job type, partition) pairs where these log records may have made a job activatable;
    the type is `EVERY_TYPE` for a resolved incident. A job that the same records then push
    (a JOB_BATCH ACTIVATED of `PUSH_WORKER`, in the transaction that made it activatable) is
    not: its CREATED wakes nobody, so a type that is pushed keeps its drained marks and its long
    polls park at once instead of asking the engine for jobs already on their way here."""
    woken: list[Key] = []
    jobs: dict[tuple[int, int], Key] = {}
    """(partition, job key) -> (type, partition) of the jobs made activatable, in log order."""
    for message in messages:
        partition, data = message.partition(), message.value()
        if message.error() is not None or partition is None or data is None:
            continue
        kinds = dict(message.headers() or ())
        if kinds.get(RECORD_TYPE) != EVENT:
            continue
        value_type, intent = kinds.get(VALUE_TYPE), kinds.get(INTENT)
        if value_type == b"INCIDENT" and intent == b"RESOLVED":
            woken.append((EVERY_TYPE, partition))
            continue
        job = value_type == b"JOB" and intent in _ACTIVATABLE
        if not job and not (value_type == b"JOB_BATCH" and intent == b"ACTIVATED"):
            continue
        try:
            record = codec.decode(data)
        except Exception:  # the engine's own records: unreadable ones are the engine's concern
            continue
        value = record.value
        if job and isinstance(value, JobValue):
            jobs[partition, record.key] = (value.type, partition)
        elif isinstance(value, JobBatchValue) and value.worker == PUSH_WORKER:
            for key in value.job_keys:
                jobs.pop((partition, key), None)
    return woken + list(dict.fromkeys(jobs.values()))
