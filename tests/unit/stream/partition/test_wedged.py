"""A transactional call that blocks long past its timeout ends the worker process (librdkafka's
`send_offsets_to_transaction` can block forever after a broker restart: confluentinc/
librdkafka#5456, #5511), so whatever runs the worker starts a new one."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from partita.stream.partition.wedged import EXIT_WEDGED, CallWatch
from partita.stream.processing import transaction


def test_a_call_blocked_past_its_timeout_and_grace_is_reported_once() -> None:
    blocked: list[tuple[str, float]] = []
    watch = CallWatch(
        lambda what, waited: blocked.append((what, waited)), grace_s=0.1, every_s=0.02
    )
    with watch.guard("quick call", 0.05):
        time.sleep(0.01)
    with watch.guard("stuck call", 0.05):
        time.sleep(0.6)
    assert [what for what, _ in blocked] == ["stuck call"]
    assert blocked[0][1] >= 0.15  # its timeout and the grace


def test_the_batch_transaction_sends_offsets_under_the_watch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocked: list[str] = []
    monkeypatch.setattr(
        transaction,
        "WATCH",
        CallWatch(lambda what, _: blocked.append(what), grace_s=0.1, every_s=0.02),
    )
    monkeypatch.setattr(transaction, "TXN_TIMEOUT_S", 0.05)
    released = threading.Event()

    class _Producer:
        def send_offsets_to_transaction(self, *_: Any) -> None:
            released.wait(2.0)  # as librdkafka does when the coordinator is gone

    batch = transaction.BatchTransaction.__new__(transaction.BatchTransaction)
    batch.producer, batch.partition, batch.group_metadata = _Producer(), 2, lambda: None  # type: ignore[assignment]
    threading.Timer(0.6, released.set).start()
    batch._send_offsets([object()])  # type: ignore[list-item]
    assert blocked == ["partition 2: send_offsets_to_transaction"]


def test_the_default_action_says_why_and_exits_for_a_restart() -> None:
    script = (
        "import time\n"
        "from partita.stream.partition.wedged import CallWatch\n"
        "watch = CallWatch(grace_s=0.1, every_s=0.05)\n"
        "with watch.guard('partition 0: send_offsets_to_transaction', 0.05):\n"
        "    time.sleep(10)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == EXIT_WEDGED
    assert "partition 0: send_offsets_to_transaction has been blocked for" in run.stderr
    assert "confluentinc/librdkafka#5456" in run.stderr
