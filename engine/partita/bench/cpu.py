"""`partita bench cpu`: the engine's CPU per command on its batch path, without Kafka.

The engine side of `partita bench loop` (the same trivial processor: 1 command -> 5 events,
a new key per command), fed batches of client commands from memory: admission, the copy into
the log at predicted positions, processing, encoding, the transaction's calls and the RocksDB
commit, over a producer double that numbers the records as one partition would and reports
their delivery when flushed. What it leaves out is what Kafka and confluent-kafka cost (about
1.5 us per record produced, the same for any loop), so the figure moves only with the engine's
own work and holds still on a machine where `bench loop` swings by a third from run to run.

Each batch is timed alone; the first `warm_up` batches are left out; the median and the
fastest batch are reported, in microseconds per command.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from partita.bench.loop import bench_command, bench_engine
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import Headers, record_headers
from partita.state import KeyGenerator, PartitionDb
from partita.stream.processing.state_machine import ProcessingStateMachine
from partita.stream.worker import GC_THRESHOLDS

_LOG, _INGRESS = "bench.log", "bench.commands"


class _Message:
    """A consumed record as the processing state machine reads it."""

    __slots__ = ("_headers", "_offset", "_topic", "_value")

    def __init__(self, topic: str, offset: int, value: bytes, headers: Headers) -> None:
        self._topic, self._offset, self._value, self._headers = topic, offset, value, headers

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value

    def headers(self) -> Headers:
        return self._headers

    def error(self) -> None:
        return None


class _Producer:
    """A transactional producer of one partition: each record gets the next offset, a commit
    takes one more (its marker), delivery reports are served on flush, poll and commit."""

    def __init__(self) -> None:
        self.next_offset = 0
        self.produced = 0
        self._reports: list[tuple[Callable[..., None], int]] = []

    def begin_transaction(self) -> None:
        pass

    def produce(  # noqa: PLR0917 - confluent-kafka's order, which the engine calls positionally
        self,
        topic: str,
        value: bytes,
        key: bytes | None = None,
        partition: int = -1,
        on_delivery: Callable[..., None] | None = None,
        callback: Any = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        if on_delivery is not None:
            self._reports.append((on_delivery, self.next_offset))
        self.next_offset += 1
        self.produced += 1

    def flush(self, _timeout: float = 0) -> int:
        reports, self._reports = self._reports, []
        for report, offset in reports:
            report(None, _Message(_LOG, offset, b"", []))
        return 0

    def poll(self, _timeout: float = 0) -> int:
        return self.flush()

    def send_offsets_to_transaction(self, *_: Any) -> None:
        pass

    def commit_transaction(self, _timeout: float = 0) -> None:
        self.flush()
        self.next_offset += 1

    def abort_transaction(self, _timeout: float = 0) -> None:
        self._reports = []


def run(
    commands: int = 60_000,
    batch: int = 2000,
    *,
    warm_up: int = 3,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Process `commands` client commands in batches of `batch`; the engine's CPU per
    command (median and fastest batch after `warm_up` batches)."""
    if batch < 1 or commands < batch * (warm_up + 1):
        raise ValueError(
            f"{commands} commands make fewer than {warm_up + 1} batches of {batch}: give at"
            f" least {batch * (warm_up + 1)} commands"
        )
    progress(
        f"The engine's batch path without Kafka: {commands:,} commands in batches of {batch:,}"
    )
    codec = RecordCodec()
    messages = []
    for offset in range(commands):
        record = bench_command(offset)
        messages.append(_Message(_INGRESS, offset, codec.encode(record), record_headers(record)))
    per_command, cpu_per_command = [], []
    with tempfile.TemporaryDirectory(prefix="partita-bench-cpu-") as home:
        db = PartitionDb(Path(home) / "state")
        producer = _Producer()
        machine = ProcessingStateMachine(
            topic=_LOG,
            partition=0,
            partition_count=1,
            engine=bench_engine(),
            codec=codec,
            db=db,
            keys=KeyGenerator(db, 1),
            producer=producer,  # type: ignore[arg-type]
            group_metadata=lambda: None,
            rewind=lambda *_: None,
            next_offset=0,
            ingress_topic=_INGRESS,
            next_ingress_offset=0,
        )
        gc.freeze()  # as the worker runs (partita.stream.worker)
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            for start in range(0, commands - batch + 1, batch):
                started, cpu_started = time.perf_counter(), time.thread_time()
                chunk = messages[start : start + batch]
                machine.process([], ingress=chunk)  # type: ignore[arg-type]  # Message's double
                cpu = time.thread_time() - cpu_started
                per_command.append((time.perf_counter() - started) / batch * 1e6)
                cpu_per_command.append(cpu / batch * 1e6)
                done = start + batch
                if done % (batch * 10) == 0:
                    progress(f"{done:,} of {commands:,} commands")
        finally:
            gc.unfreeze()
            db.close()
    timed, cpu_timed = per_command[warm_up:], cpu_per_command[warm_up:]
    return {
        "bench": "cpu",
        "commands": len(per_command) * batch,
        "batch": batch,
        "us_per_command": round(statistics.median(timed), 2),
        "us_per_command_fastest_batch": round(min(timed), 2),
        "cpu_us_per_command": round(statistics.median(cpu_timed), 2),
        "records_produced": producer.produced,
        "batches_predicted": machine.metrics.predicted,
        "codec": "compiled" if codec.native else "pure-python",
    }
