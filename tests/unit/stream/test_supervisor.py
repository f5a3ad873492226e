"""The supervisor's restart policy (back-off, reset, giving up) as a pure function of the times
a child started and ended, and how an exit is described; no processes."""

from __future__ import annotations

import signal

import pytest

from engine.stream.supervisor import RestartPolicy, Restarts, describe_exit

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
