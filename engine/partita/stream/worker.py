"""`partita worker`: one member of the engine's consumer group on `<ns>.log`.

Every partition the group assigns becomes a `PartitionTask`, opened (fenced, replayed) inside
the assignment callback and then fed batches from the one group consumer. Ownership is the
group's assignment of the log alone: the owner of log partition p also assigns itself ingress
partition p (`<ns>.commands`, same partition count) in the same callback and gives it up with
the log partition, so client commands are read by exactly the member that may process them.
Revoked or lost partitions close their task. A fenced task means this process is a zombie for
that partition: the worker then leaves the group and joins again with fresh tasks, so it never
commits on a partition it no longer owns. SIGTERM/SIGINT finish the batch in hand, then close
cleanly.

The batches of one poll run side by side, one thread per partition that received records
(`_process_batches`): a batch spends most of its time waiting for its transaction's commit
round trips, which release the GIL, so another partition's batch processes meanwhile instead
of waiting for it. Partitions share nothing a batch writes (each task has its own store,
producer and codec: the compiled decoder holds a lock while it builds objects); the loop
waits for every batch of the poll before it polls again, so the rebalance callbacks (run
inside the consumer's poll) and the timers, read-only commits and snapshots after it never
meet a batch in flight.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log import clients
from partita.log.admin import wait_for_metadata
from partita.log.security import kafka_access
from partita.processing import Engine
from partita.protocol.codec import RecordCodec
from partita.snapshots import SnapshotError, SnapshotSettings
from partita.stream.errors import AbortedBatchError, TaskFencedError, kafka_error_of, rejoin_after
from partita.stream.partition.task import PartitionTask, TaskState, state_dir
from partita.stream.processing.backpressure import Backpressure
from partita.stream.processing.replies import ReplyRoutes
from partita.stream.replay.standby import Standby
from partita.stream.skips import of_config as skip_list_of
from partita.stream.topic_readers import TopicReaders

_LOG = logging.getLogger("partita.worker")
_WAITING_REFRESH_S = 1.0
"""How soon the worker looks again while a job topic has no workers yet."""
_CONNECT_TIMEOUT_S = 60.0
"""How long a starting worker waits for the cluster before it gives up."""


def load_engine(spec: str) -> Engine:
    """`module:function` returning an Engine (the processors and appliers to run)."""
    module_name, _, function = spec.partition(":")
    try:
        factory: Callable[[], Engine] = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError, ValueError) as exc:
        raise PartitaError(
            f"cannot load the engine factory {spec!r} (expected MODULE:FUNCTION): {exc}"
        ) from None
    return factory()


GC_THRESHOLDS = (100_000, 10, 10)
"""The cyclic collector's thresholds while processing (CPython's are 700, 10, 10): the
per-record loop allocates many short-lived objects and makes almost no cycles, and at the
default a full collection of everything the process loaded stalls a batch for tens of ms.
A batch of 2,000 commands holds some 60,000 tracked objects (tuples, lists) until it ends: a
young generation of 100,000 lets them die uncollected, where 10,000 traversed each of them
once or twice (`bench loop`, 60,000 commands: about 200 against 50 ms of collection, the longest
young collection 9 against 3 ms)."""


def tune_gc() -> None:
    """Move what start-up made (modules, the engine, parsed models) out of the collector's
    sight (`gc.freeze`) and collect the young generation less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


CONSUME_BATCH = 2000
"""Records taken from the consumer per batch, log and ingress together. Most of a busy log is
the engine's own events read back (a one-task instance writes 26 log records for 2 client
commands), so a batch of 500 held some 35 client commands and saturation paid a transaction
for each few; with 2,000 one-task saturation rose by a fifth to a half in alternated runs."""


_BATCH_THREADS = 16
"""Threads for the batches of one poll: one per partition with records, up to this many."""


class Worker:
    def __init__(
        self,
        config: Config,
        engine: Engine,
        *,
        max_commands_in_batch: int = 100,
        consume_batch: int = CONSUME_BATCH,
        consumer_overrides: dict[str, Any] | None = None,
        job_topic_refresh_s: float = 5.0,
    ) -> None:
        self.config = config
        self.engine = engine
        self.codec = RecordCodec(native=config.native_wanted)
        self.skips = skip_list_of(config)
        self.max_commands_in_batch = max_commands_in_batch
        self.consume_batch = consume_batch
        self.consumer_overrides = consumer_overrides or {}
        self.tasks: dict[int, PartitionTask] = {}
        self.stopping = threading.Event()
        self.consumer: Consumer | None = None
        self._leaving = False  # closing this member's consumer: it opens no partition now
        self.partition_count = 0
        for hook in engine.topic_hooks:  # e.g. job push: its limits come from the config
            hook.configure(config)
        self.job_topic_refresh_s = job_topic_refresh_s
        self._next_job_topic_refresh = 0.0
        self.standbys: dict[int, Standby] = {}
        self._no_standby: set[int] = set()
        self.replies = ReplyRoutes(config.allowed_reply_topics)
        self.backpressure = Backpressure(config.backpressure_lag, 0, config.commands_topic)
        self.access = kafka_access(config, KafkaRole.ENGINE)
        self._readers = TopicReaders(self.access)
        self._batch_threads: ThreadPoolExecutor | None = None

    # -- rebalance callbacks (run inside consume()) ----------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.stopping.is_set() or self._leaving:
            # a rebalance while leaving (another worker left meanwhile, or this member failed
            # and rejoins): opening a task now would replay and then ask for committed offsets
            # from inside consumer.close(), which cannot answer, so the close timed out. The
            # partitions go back at once.
            _LOG.info(
                "not opening partitions %s: %s",
                sorted(tp.partition for tp in partitions),
                "stopping" if self.stopping.is_set() else "leaving the group",
            )
            return
        for tp in partitions:  # the task opens the store its standby kept warm
            standby = self.standbys.pop(tp.partition, None)
            if standby is not None:
                standby.close()
        tasks = [
            PartitionTask(
                access=self.access,
                namespace=self.config.namespace,
                topic=self.config.log_topic,
                partition=tp.partition,
                partition_count=self.partition_count,
                home=self.config.home,
                engine=self.engine,
                # a codec of its own: batches of different partitions run at once
                codec=RecordCodec(native=self.config.native_wanted),
                consumer=consumer,
                max_commands_in_batch=self.max_commands_in_batch,
                message_ttl_ms=self.config.message_ttl_ms,
                offsets_commit_s=self.config.offsets_commit_ms / 1000,
                ingress_topic=self.config.commands_topic,
                replies=self.replies,
                backpressure=self.backpressure,
                skips=self.skips,
                snapshots=SnapshotSettings(
                    every_records=self.config.snapshot_every_records,
                    interval_s=self.config.snapshot_interval_ms / 1000,
                    downstream_groups=self.config.downstream_groups,
                    truncate=self.config.truncate,
                ),
            )
            for tp in partitions
        ]
        if len(tasks) > 1:  # fencing is a round trip per partition: do them together
            with ThreadPoolExecutor(max_workers=min(8, len(tasks))) as pool:
                list(pool.map(PartitionTask.fence, tasks))
        assigned = []
        for task in tasks:
            task.open()
            self.tasks[task.partition] = task
            assigned.append(TopicPartition(task.topic, task.partition, task.next_offset))
            assigned.append(
                TopicPartition(self.config.commands_topic, task.partition, task.next_ingress_offset)
            )
        consumer.incremental_assign(assigned)
        stopped = [tp for tp in assigned if self.tasks[tp.partition].state is TaskState.STOPPED]
        if stopped:  # owned, so no other worker stops on the same record, but never read
            consumer.pause(stopped)
        _LOG.info("assigned partitions %s", sorted(self.tasks))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            task = self.tasks.pop(tp.partition, None)
            if task is not None:
                task.close()  # with standbys on, the next loop keeps it warm from here
        ingress = self.config.commands_topic
        wanted = [*partitions, *(TopicPartition(ingress, tp.partition) for tp in partitions)]
        # only what is assigned: an assignment callback that failed half-way assigned nothing
        assigned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
        present = [tp for tp in wanted if (tp.topic, tp.partition) in assigned]
        if present:
            consumer.incremental_unassign(present)
        _LOG.info("revoked partitions %s", sorted(tp.partition for tp in partitions))

    # -- main loop ------------------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        def stop(signum: int, _frame: object) -> None:
            _LOG.info("received %s, stopping after the current batch", signal.Signals(signum).name)
            self.stopping.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def run(self) -> None:
        """Process until `stopping` is set. Rejoins the group after being fenced. Raises
        KafkaAccessError at once when the cluster refuses the engine's credentials."""
        wait_for_metadata(self.access, timeout=_CONNECT_TIMEOUT_S)
        tune_gc()
        _LOG.info(
            "records are encoded and decoded by the %s codec (PARTITA_NATIVE)",
            "compiled" if self.codec.native else "pure-Python",
        )
        while not self.stopping.is_set():
            try:
                self._run_member()
            except TaskFencedError as fenced:
                _LOG.warning("fenced (%s): leaving the group and joining again", fenced)
            except Exception as exc:  # a Kafka error surfacing from poll or a callback
                error = kafka_error_of(exc)
                if error is None or not rejoin_after(error):
                    raise
                # e.g. the group coordinator moved while a rebalance callback asked it for
                # offsets (a broker restart): the partitions are closed; join again
                _LOG.warning("Kafka error (%s): leaving the group and joining again", error.str())
                self.stopping.wait(1.0)

    def _run_member(self) -> None:
        consumer = clients.group_consumer(
            self.access, self.config.namespace, **self.consumer_overrides
        )
        self.consumer = consumer
        self._leaving = False
        self.partition_count = self._partition_count(consumer)
        self._refresh_topics(consumer)
        consumer.subscribe(
            [self.config.log_topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_revoke,
        )
        try:
            while not self.stopping.is_set():
                self._poll_once(consumer)
            for task in self.tasks.values():  # a graceful stop leaves no offset behind
                if task.state is TaskState.PROCESSING:
                    with contextlib.suppress(AbortedBatchError):
                        task.commit_read_only(wait=False)
        finally:
            self._leaving = True
            for task in self.tasks.values():
                task.close()
            self.tasks.clear()
            for standby in self.standbys.values():
                standby.close()
            self.standbys.clear()
            clients.close_consumer(consumer)
            self.consumer = None
            if self._batch_threads is not None:
                self._batch_threads.shutdown()
                self._batch_threads = None

    def _poll_once(self, consumer: Consumer) -> None:
        messages = clients.consume_available(consumer, self.consume_batch, 0.05)
        log: dict[int, list[Message]] = defaultdict(list)
        ingress: dict[int, list[Message]] = defaultdict(list)
        log_topic = self.config.log_topic
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    _LOG.warning("consumer: %s", error.str())
                continue
            partition = message.partition()
            if partition is not None:
                (log if message.topic() == log_topic else ingress)[partition].append(message)
        batches: list[tuple[PartitionTask, Sequence[Message], Sequence[Message]]] = []
        for partition in log.keys() | ingress.keys():
            task = self.tasks.get(partition)
            if task is None or task.state is not TaskState.PROCESSING:
                continue  # fetched before a revocation, or stopped
            batches.append((task, log.get(partition, ()), ingress.get(partition, ())))
        self._process_batches(batches)
        now = time.time()
        for task in list(self.tasks.values()):
            if task.state is not TaskState.PROCESSING:
                continue
            try:
                task.check_due_dates(now)
                task.commit_read_only()
            except AbortedBatchError:
                continue
            task.maybe_snapshot()
        if time.monotonic() >= self._next_job_topic_refresh:
            self._refresh_topics(consumer)
        if self.config.standby:
            self._keep_standbys()

    def _process_batches(
        self, batches: list[tuple[PartitionTask, Sequence[Message], Sequence[Message]]]
    ) -> None:
        """Process each partition's batch, side by side when there are several, and return once
        all have ended. An aborted batch is read again (its task rewound the consumer); any
        other error is raised once every batch has ended (the first of them)."""
        if len(batches) == 1:
            task, log, ingress = batches[0]
            with contextlib.suppress(AbortedBatchError):
                task.process(log, ingress)
            return
        if not batches:
            return
        if self._batch_threads is None:
            self._batch_threads = ThreadPoolExecutor(
                max_workers=_BATCH_THREADS, thread_name_prefix="partita-batch"
            )
        running = [
            self._batch_threads.submit(task.process, log, ingress) for task, log, ingress in batches
        ]
        failure: BaseException | None = None
        for future in running:
            error = future.exception()
            if error is not None and not isinstance(error, AbortedBatchError) and failure is None:
                failure = error
        if failure is not None:
            raise failure

    def _keep_standbys(self) -> None:
        """A warm copy of every partition this worker does not own."""
        for partition in range(self.partition_count):
            if partition in self.tasks or partition in self.standbys:
                continue
            if partition in self._no_standby:
                continue
            try:
                self.standbys[partition] = Standby(
                    access=self.access,
                    namespace=self.config.namespace,
                    topic=self.config.log_topic,
                    partition=partition,
                    path=state_dir(self.config.home, self.config.namespace, partition),
                    engine=self.engine,
                    codec=self.codec,
                    skips=self.skips,
                )
            except SnapshotError as error:  # its owner cannot rebuild it either: say so once
                self._no_standby.add(partition)
                _LOG.error("no standby for partition %d: %s", partition, error)
        for standby in self.standbys.values():
            standby.catch_up()

    def _partition_count(self, consumer: Consumer) -> int:
        """The log's partition count; the ingress topic must exist with the same count.
        Metadata right after a broker restart can lack topics for a moment: asked again for
        up to 30 s before the worker gives up."""
        log, ingress = self.config.log_topic, self.config.commands_topic
        deadline = time.monotonic() + 30
        while True:
            metadata = consumer.list_topics(timeout=30).topics
            complete = all(
                name in metadata and metadata[name].error is None and metadata[name].partitions
                for name in (log, ingress)
            )
            if complete:
                break
            if time.monotonic() > deadline or self.stopping.wait(1.0):
                raise PartitaError(
                    f"topics {log} and {ingress} must both exist at {self.config.bootstrap}:"
                    " run `partita topics apply` first"
                )
        count = len(metadata[log].partitions)
        if len(metadata[ingress].partitions) != count:
            raise PartitaError(
                f"{ingress} has {len(metadata[ingress].partitions)} partitions but {log} has"
                f" {count}: the ingress topic must have the log's partition count"
            )
        return count

    def _refresh_topics(self, consumer: Consumer) -> None:
        """From the cluster's metadata, every few seconds (every second while a job topic waits
        for its workers): the partition counts of the allowed reply topics, and the topics of
        the engine's topic hooks (job push: a job type is pushed while `<ns>.jobs.<type>`
        exists and its workers' group has members; jobs waiting until then are pushed at
        once)."""
        self._next_job_topic_refresh = time.monotonic() + self.job_topic_refresh_s
        try:
            metadata = consumer.list_topics(timeout=5)
        except KafkaException as exc:
            _LOG.warning("cannot list topics: %s", exc.args[0].str())
            return
        self.replies.update(
            {
                name: len(topic.partitions)
                for name, topic in metadata.topics.items()
                if topic.error is None and topic.partitions
            }
        )
        for hook in self.engine.topic_hooks:
            prefix = hook.topic_prefix(self.config.namespace)
            existing = {
                name: len(topic.partitions)
                for name, topic in metadata.topics.items()
                if name.startswith(prefix) and topic.error is None and topic.partitions
            }
            new = hook.topics_found(self._readers.read(hook, existing))
            if self._readers.waiting:
                self._next_job_topic_refresh = min(
                    self._next_job_topic_refresh, time.monotonic() + _WAITING_REFRESH_S
                )
            if not new:
                continue
            _LOG.info("topics of %s now written or not: %s", type(hook).__name__, new)
            for task in list(self.tasks.values()):
                if task.state is not TaskState.PROCESSING:
                    continue
                try:
                    task.catch_up(hook, new)
                except AbortedBatchError:
                    continue
