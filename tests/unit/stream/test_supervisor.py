"""The supervisor's restart policy (back-off, reset, giving up) as a pure function of the times
a child started and ended, and how an exit is described, without processes; then the
supervisor itself over tiny Python children (no Kafka): giving up, stopping, escalating."""

from __future__ import annotations

import io
import re
import signal
import sys
import threading
import time
from typing import Any

import pytest

from partita.stream.supervisor import (
    GaveUpError,
    RestartPolicy,
    Restarts,
    Supervisor,
    describe_exit,
)

POLICY = RestartPolicy(
    first_delay_s=1, max_delay_s=30, reset_after_s=60, max_crashes=5, window_s=300
)


def crash_at_once(restarts: Restarts, times: list[float]) -> list[float | None]:
    """Each crash one second after its start."""
    return [restarts.after_exit(started=t - 1, ended=t) for t in times]


def test_the_delay_doubles_from_one_second_up_to_thirty() -> None:
    policy = RestartPolicy(max_crashes=100, window_s=300)
    restarts = Restarts(policy)
    delays = crash_at_once(restarts, [float(t) for t in range(0, 80, 10)])
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]


def test_a_child_that_ran_a_minute_starts_over_at_one_second() -> None:
    restarts = Restarts(POLICY)
    assert crash_at_once(restarts, [10, 20, 30]) == [1, 2, 4]
    assert restarts.after_exit(started=31, ended=31 + 60) == 1
    assert restarts.after_exit(started=92, ended=93) == 2


def test_more_than_max_crashes_within_the_window_gives_up() -> None:
    restarts = Restarts(POLICY)
    delays = crash_at_once(restarts, [10, 20, 30, 40, 50, 60])
    assert delays[:5] == [1, 2, 4, 8, 16]
    assert delays[5] is None
    assert len(restarts.crashes) == 6


def test_crashes_older_than_the_window_are_forgotten() -> None:
    restarts = Restarts(POLICY)
    crash_at_once(restarts, [0, 100, 200, 290, 299])  # five within 300 s
    assert restarts.after_exit(started=330, ended=331) is not None  # the one at 0 is gone
    assert list(restarts.crashes) == [100, 200, 290, 299, 331]
    assert restarts.after_exit(started=332, ended=333) is None  # six within 300 s


@pytest.mark.parametrize(
    ("returncode", "said"),
    [
        (1, "exited with code 1"),
        (0, "exited with code 0"),
        (-signal.SIGKILL, "was killed by SIGKILL"),
        (-signal.SIGSEGV, "was killed by SIGSEGV"),
        (-200, "was killed by signal 200"),
    ],
)
def test_an_exit_is_described_by_its_code_or_signal(returncode: int, said: str) -> None:
    assert describe_exit(returncode) == said


def supervisor(code: str, count: int = 2, **kwargs: Any) -> tuple[Supervisor, io.StringIO]:
    """A Supervisor of `count` children running `code`, with a quick policy; its output."""
    out = io.StringIO()
    policy = RestartPolicy(first_delay_s=0.05, max_delay_s=0.1, max_crashes=2, window_s=60)
    command = [sys.executable, "-c", code]
    return Supervisor(command, count, policy=policy, out=out, **kwargs), out


def test_a_child_that_keeps_failing_makes_the_supervisor_give_up_naming_its_last_line() -> None:
    sup, out = supervisor("import sys; print('bad setting X'); sys.exit(3)")
    with pytest.raises(GaveUpError, match=r"exited with code 3: it ended 3 times within 60 s") as e:
        sup.run()
    assert str(e.value).endswith("its last line: bad setting X")
    assert re.search(r"^\[worker-[12]\] bad setting X$", out.getvalue(), re.MULTILINE)
    assert "restarting it in 0.05 s (end 1 of at most 2 within 60 s)" in out.getvalue()
    assert all(child.process is None for child in sup.children)


def test_a_stop_sends_sigterm_to_every_child_and_is_clean_when_each_exits_0() -> None:
    handles_sigterm = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    sup, out = supervisor(handles_sigterm)

    def stop_when_ready() -> None:
        while out.getvalue().count("ready") < 2:
            time.sleep(0.05)
        sup.stopping.set()

    threading.Thread(target=stop_when_ready, daemon=True).start()
    assert sup.run() == 0
    assert "[supervisor] every worker stopped" in out.getvalue()
    assert "SIGKILL" not in out.getvalue()


def test_a_child_that_ignores_sigterm_gets_sigkill_after_the_timeout() -> None:
    ignores_sigterm = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    sup, out = supervisor(ignores_sigterm, count=1, stop_timeout_s=0.5)

    def stop_when_ready() -> None:
        while "ready" not in out.getvalue():
            time.sleep(0.05)
        sup.stopping.set()

    threading.Thread(target=stop_when_ready, daemon=True).start()
    assert sup.run() == 1
    assert "worker-1 (pid " in out.getvalue() and "did not stop: SIGKILL" in out.getvalue()
    assert "was killed by SIGKILL" in out.getvalue()
