"""`partita worker --processes N`: N partition workers on one machine under one supervisor.

Each child is the plain `partita worker` command (without `--processes`) in its own OS process:
its own member of the engine group, so the group spreads the log's partitions over the
children exactly as over workers on different machines. The children share the home: a
partition that moves between them (a rebalance, a restart) is opened from the store its last
owner on this machine left. Two of them never hold one store at once: the group's cooperative
rebalancing revokes a partition (its task closes the store) before it assigns it elsewhere, and
the kernel drops a killed child's RocksDB lock with the child.

The supervisor guarantees:

- every line a child prints reaches the supervisor's stderr prefixed `[worker-<i>]` (1-based);
  its own lines are prefixed `[supervisor]`;
- SIGTERM or SIGINT is forwarded as SIGTERM to every child (each finishes its batch and leaves
  the group); a child still running after `stop_timeout_s`, or after a second signal, gets
  SIGKILL. The exit code is 0 only when every child stopped by itself with 0;
- a child that ends while the supervisor is not stopping is started again after a back-off
  (`Restarts`); one that ends more than `max_crashes` times within `window_s` makes the
  supervisor stop the others and fail with `GaveUpError`, naming the child, how it ended and
  its last line;
- children die with the supervisor: each asks the kernel for SIGTERM when its parent dies
  (`follow_supervisor`), so a killed supervisor leaves no orphans processing the log.

Children run in their own process group, so a terminal's Ctrl-C reaches only the supervisor,
which then stops them in order (never a child that exits before the supervisor knows why).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO

from partita.config.settings import SUPERVISOR_PID
from partita.errors import PartitaError

SUPERVISOR_PID_ENV = SUPERVISOR_PID.env
"""Set in each child's environment: the pid whose death must stop the child."""

_PR_SET_PDEATHSIG = 1


class GaveUpError(PartitaError):
    """A child kept crashing; the message names it, how it ended and its last line."""


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """When a child that ended is started again, and when the supervisor gives up."""

    first_delay_s: float = 1.0
    max_delay_s: float = 30.0
    """The delay doubles after each crash up to this."""
    reset_after_s: float = 60.0
    """A child that ran this long before it ended starts over at `first_delay_s`."""
    max_crashes: int = 5
    window_s: float = 300.0
    """More than `max_crashes` ends within `window_s`: give up."""


class Restarts:
    """One child's crash history under a `RestartPolicy`. Pure: the times are passed in."""

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self.delay_s = policy.first_delay_s
        self.crashes: deque[float] = deque()

    def after_exit(self, *, started: float, ended: float) -> float | None:
        """Seconds to wait before starting the child again; None when it ended more than
        `max_crashes` times within `window_s` (give up)."""
        policy = self.policy
        if ended - started >= policy.reset_after_s:
            self.delay_s = policy.first_delay_s
        self.crashes.append(ended)
        while self.crashes and self.crashes[0] < ended - policy.window_s:
            self.crashes.popleft()
        if len(self.crashes) > policy.max_crashes:
            return None
        delay, self.delay_s = self.delay_s, min(self.delay_s * 2, policy.max_delay_s)
        return delay


def describe_exit(returncode: int) -> str:
    """`exited with code 1`, or `was killed by SIGKILL` (Popen's negative return codes)."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-returncode).name}"
        return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


@dataclass
class _Child:
    index: int
    restarts: Restarts
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    restart_at: float | None = None
    last_line: str = ""
    reader: threading.Thread | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"worker-{self.index}"


class Supervisor:
    """Runs `count` copies of `command` until stopped; see the module's guarantees."""

    def __init__(
        self,
        command: Sequence[str],
        count: int,
        *,
        policy: RestartPolicy | None = None,
        stop_timeout_s: float = 30.0,
        env: dict[str, str] | None = None,
        out: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if count < 1:
            raise PartitaError(f"--processes must be at least 1, not {count}")
        self.command = list(command)
        self.stop_timeout_s = stop_timeout_s
        self.env = {**(os.environ if env is None else env), SUPERVISOR_PID_ENV: str(os.getpid())}
        self.out = out or sys.stderr
        self.clock = clock
        policy = policy or RestartPolicy()
        self.children = [_Child(i, Restarts(policy)) for i in range(1, count + 1)]
        self.stopping = threading.Event()
        self.hurry = threading.Event()
        self._write_lock = threading.Lock()

    def say(self, message: str) -> None:
        self._write(f"[supervisor] {message}\n")

    def _write(self, text: str) -> None:
        with self._write_lock:
            self.out.write(text)
            self.out.flush()

    def install_signal_handlers(self) -> None:
        def stop(signum: int, _frame: object) -> None:
            if self.stopping.is_set():
                self.hurry.set()  # a second signal: no more waiting
            self.stopping.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def run(self) -> int:
        """Supervise until a signal (0 when every child stopped cleanly, else 1); raises
        GaveUpError, after stopping every child, when one kept crashing."""
        for child in self.children:
            self._start(child)
        gave_up: str | None = None
        while not self.stopping.is_set() and gave_up is None:
            now = self.clock()
            for child in self.children:
                if child.process is not None and child.process.poll() is not None:
                    gave_up = self._ended(child, now)
                    if gave_up is not None:
                        break
                if child.restart_at is not None and now >= child.restart_at:
                    self._start(child)
            self.stopping.wait(0.1)
        clean = self._stop_all()
        if gave_up is not None:
            raise GaveUpError(gave_up)
        return 0 if clean else 1

    def _start(self, child: _Child) -> None:
        process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            process_group=0,
        )
        child.process, child.started, child.restart_at = process, self.clock(), None
        child.reader = threading.Thread(
            target=self._relay, args=(child, process), name=f"{child.name}-log", daemon=True
        )
        child.reader.start()
        self.say(f"started {child.name} (pid {process.pid})")

    def _relay(self, child: _Child, process: subprocess.Popen[bytes]) -> None:
        """Copy the child's output line by line, prefixed with its name, until it closes."""
        assert process.stdout is not None
        prefix = f"[{child.name}] "
        for raw in process.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            if line.strip():
                child.last_line = line.strip()
            self._write(prefix + line + "\n")
        process.stdout.close()

    def _ended(self, child: _Child, now: float) -> str | None:
        """A child ended unasked: schedule its restart, or return why the supervisor gives up."""
        assert child.process is not None
        process, child.process = child.process, None
        if child.reader is not None:
            child.reader.join(5)  # its last lines, before the verdict that names them
        ended = describe_exit(int(process.returncode))
        ran = now - child.started
        delay = child.restarts.after_exit(started=child.started, ended=now)
        last = f"; its last line: {child.last_line}" if child.last_line else ""
        policy = child.restarts.policy
        if delay is None:
            return (
                f"{child.name} (pid {process.pid}) {ended}: it ended"
                f" {len(child.restarts.crashes)} times within {policy.window_s:.0f} s, giving"
                f" up{last}"
            )
        child.restart_at = now + delay
        self.say(
            f"{child.name} (pid {process.pid}) {ended} after {ran:.1f} s{last}; restarting it in"
            f" {delay:g} s (end {len(child.restarts.crashes)} of at most {policy.max_crashes}"
            f" within {policy.window_s:.0f} s)"
        )
        return None

    def _stop_all(self) -> bool:
        """SIGTERM every running child, wait, SIGKILL what is left. True when each one
        stopped by itself with exit code 0."""
        running = [c for c in self.children if c.process is not None]
        for child in self.children:
            child.restart_at = None
        if running:
            self.say(f"stopping {', '.join(c.name for c in running)}")
        for child in running:
            assert child.process is not None
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signal.SIGTERM)
        deadline = self.clock() + self.stop_timeout_s
        while any(c.process.poll() is None for c in running if c.process is not None):
            if self.clock() >= deadline or self.hurry.is_set():
                break
            time.sleep(0.1)
        clean = True
        for child in running:
            assert child.process is not None
            if child.process.poll() is None:
                self.say(f"{child.name} (pid {child.process.pid}) did not stop: SIGKILL")
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()
                child.process.wait()
            if child.reader is not None:
                child.reader.join(5)
            code = int(child.process.returncode)
            if code != 0:
                clean = False
                self.say(f"{child.name} (pid {child.process.pid}) {describe_exit(code)}")
            child.process = None
        self.say("every worker stopped" if clean else "stopped, not every worker cleanly")
        return clean


def follow_supervisor(stop: Callable[[], None]) -> None:
    """In a child: ask the kernel for SIGTERM when the supervisor dies (Linux), and call
    `stop` at once when it is gone already. A no-op outside a supervisor."""
    supervisor = SUPERVISOR_PID.read()
    if not supervisor:
        return
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != supervisor:
        stop()
