"""The batches of one poll run side by side, one thread per partition with records, and the
worker polls again only once every one of them has ended: an aborted batch is read again, any
other failure (a fenced task) is raised after the others have ended."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from partita.config import Config
from partita.processing.builtin import build_engine
from partita.stream.errors import AbortedBatchError, TaskFencedError
from partita.stream.worker import Worker


class _Task:
    """A partition task whose batch waits at `meeting` (all batches of the poll must be in
    flight at once to pass it), then does `then`."""

    def __init__(self, partition: int, meeting: threading.Barrier, then: Any = None) -> None:
        self.partition = partition
        self.meeting = meeting
        self.then = then
        self.processed: list[tuple[Sequence[object], Sequence[object]]] = []
        self.ended_at = 0.0

    def process(self, log: Sequence[object], ingress: Sequence[object] = ()) -> int:
        self.meeting.wait(timeout=10)  # BrokenBarrierError when the batches ran one by one
        self.processed.append((log, ingress))
        self.ended_at = time.monotonic()
        if self.then is not None:
            raise self.then
        return len(log) + len(ingress)


def _worker(tmp_path: Path) -> Worker:
    return Worker(Config(home=tmp_path, namespace="batches"), build_engine())


def test_the_batches_of_one_poll_are_in_flight_at_once(tmp_path: Path) -> None:
    worker = _worker(tmp_path)
    meeting = threading.Barrier(3)
    tasks = [_Task(p, meeting) for p in range(3)]
    worker._process_batches([(t, [f"log-{t.partition}"], [f"in-{t.partition}"]) for t in tasks])  # type: ignore[misc]
    assert [t.processed for t in tasks] == [[([f"log-{p}"], [f"in-{p}"])] for p in range(3)]


def test_an_aborted_batch_is_left_to_the_next_poll_and_the_others_land(tmp_path: Path) -> None:
    worker = _worker(tmp_path)
    meeting = threading.Barrier(2)
    aborted, landed = _Task(0, meeting, AbortedBatchError("rewound")), _Task(1, meeting)
    worker._process_batches([(aborted, ["a"], []), (landed, ["b"], [])])  # type: ignore[list-item]
    assert aborted.processed == [(["a"], [])]
    assert landed.processed == [(["b"], [])]


def test_a_fenced_batch_is_raised_once_every_batch_of_the_poll_has_ended(tmp_path: Path) -> None:
    worker = _worker(tmp_path)
    meeting = threading.Barrier(2)
    slow = _Task(1, meeting)
    fenced = _Task(0, meeting, TaskFencedError("partition 0: fenced by a newer producer"))
    original = slow.process

    def slower(log: Sequence[object], ingress: Sequence[object] = ()) -> int:
        try:
            return original(log, ingress)
        finally:
            time.sleep(0.2)  # still in flight when the fenced batch has ended
            slow.ended_at = time.monotonic()

    slow.process = slower  # type: ignore[method-assign]
    with pytest.raises(TaskFencedError, match="fenced by a newer producer"):
        worker._process_batches([(fenced, ["a"], []), (slow, ["b"], [])])  # type: ignore[list-item]
    raised_at = time.monotonic()
    assert slow.processed == [(["b"], [])]
    assert slow.ended_at <= raised_at


def test_a_single_batch_runs_on_the_polling_thread(tmp_path: Path) -> None:
    worker = _worker(tmp_path)
    seen: list[int] = []

    class _Here:
        def process(self, log: Sequence[object], ingress: Sequence[object] = ()) -> int:
            seen.append(threading.get_ident())
            raise AbortedBatchError("rewound")

    worker._process_batches([(_Here(), ["a"], [])])  # type: ignore[list-item]
    assert seen == [threading.get_ident()]
    assert worker._batch_threads is None
