"""The processes a chaos run (`partita.ops.chaos`) fails on purpose, and the faults it injects.

The fleet is the broker, the engine workers (each with its own state folder, like separate
machines) and the job worker, each a restartable child process with its log in one file.
`inject` applies one fault at random:

- kill: `kill -9` an engine worker and restart it, with its state or with an empty folder;
- freeze: SIGSTOP an engine worker for 3-9 s (past the 6 s session timeout: its partitions
  move and its late transactions are fenced), then SIGCONT;
- scale: add an engine worker, or stop one (SIGTERM), moving partitions;
- broker: stop the broker and start it again;
- job worker: `kill -9` the job worker and restart it.

`supervise` restarts what exited on its own (counted as crashes) and thaws what is due.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from partita.errors import PartitaError
from partita.localkafka import LocalBroker

Progress = Callable[[str], None]
FAULTS = ("kill", "freeze", "scale", "broker", "job-worker")
OWNER_TIMEOUT_S = 300.0
"""How long consolidation waits for the first worker to own every partition. After a broker
restart a worker may block for minutes before it rejoins, yet legitimately: each of its
partition tasks may wait on Kafka calls bounded at 30-90 s (a commit retried, a flush and an
abort, fencing in init_transactions), one task after the other."""


class ChildProcess:
    """A child process, restartable, with its log appended to one file."""

    def __init__(self, name: str, args: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.args = args
        self.log = log
        self.env = {**os.environ, **env}
        self.process: subprocess.Popen[bytes] | None = None
        self.frozen_until = 0.0

    def start(self) -> ChildProcess:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.args, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            assert self.process is not None
            os.kill(self.process.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(10)

    def stop(self, timeout: float = 60) -> None:
        self.thaw()
        self.signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def freeze(self, seconds: float) -> None:
        self.signal(signal.SIGSTOP)
        self.frozen_until = time.monotonic() + seconds

    def thaw(self) -> None:
        if self.frozen_until:
            self.signal(signal.SIGCONT)
            self.frozen_until = 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ChaosFleet:
    """The broker, the engine workers and the job worker of one chaos run, in `scratch`."""

    def __init__(
        self,
        broker: LocalBroker,
        scratch: Path,
        *,
        namespace: str,
        job_type: str,
        worker_env: dict[str, str],
        max_workers: int,
        rng: random.Random,
        progress: Progress,
    ) -> None:
        self.broker = broker
        self.scratch = scratch
        self.namespace = namespace
        self.job_type = job_type
        self.worker_env = worker_env
        """PARTITA_* settings of every engine worker."""
        self.max_workers = max_workers
        self.rng = rng
        self.progress = progress
        self.workers: list[ChildProcess] = []
        self.job_worker = self._job_worker()
        self.faults: Counter[str] = Counter()
        self.faults_since_broker = 0
        self.crashes = 0

    # -- processes ------------------------------------------------------------------------------

    def start(self, workers: int) -> None:
        """Start `workers` engine workers and the job worker (the broker is up already)."""
        self.workers = [self._engine_worker(i).start() for i in range(workers)]
        self.job_worker.start()

    def children(self) -> list[ChildProcess]:
        return [*self.workers, self.job_worker]

    def _engine_worker(self, index: int) -> ChildProcess:
        home = self.scratch / f"worker-{index}"
        home.mkdir(exist_ok=True)
        cluster = ["--bootstrap-servers", self.broker.bootstrap, "--namespace", self.namespace]
        python = [sys.executable, "-X", "faulthandler"]  # SIGABRT: every thread's stack
        return ChildProcess(
            f"worker-{index}",
            [*python, "-m", "partita.cli", "worker", *cluster, "--home", str(home)],
            self.scratch / f"worker-{index}.log",
            self.worker_env,
        )

    def _job_worker(self) -> ChildProcess:
        args = [self.broker.bootstrap, self.namespace, self.job_type, "8"]
        return ChildProcess(
            "job-worker",
            [sys.executable, "-m", "partita.bench.e2e_jobs", *args],
            self.scratch / "job-worker.log",
            {},
        )

    def supervise(self) -> None:
        """Restart what died on its own (counted as crashes) and thaw what is due."""
        now = time.monotonic()
        for child in self.children():
            if child.frozen_until and now >= child.frozen_until:
                child.thaw()
            if not child.alive():
                self.crashes += 1
                self.progress(f"  {child.name} exited on its own; restarting (see {child.log})")
                child.start()

    def kill_all(self) -> None:
        for child in self.children():
            child.thaw()
            child.kill()

    # -- faults ---------------------------------------------------------------------------------

    def inject(self) -> None:
        """One fault at random; every fifth fault of a run restarts the broker, with at least
        four other faults between broker restarts."""
        kind = self.rng.choice(FAULTS)
        if sum(self.faults.values()) == 4:
            kind = "broker"  # every run restarts the broker at least once, as its fifth fault
        elif kind == "broker" and self.faults_since_broker < 4:
            kind = "kill"  # at least four other faults between broker restarts
        self.faults_since_broker = 0 if kind == "broker" else self.faults_since_broker + 1
        live = [w for w in self.workers if w.alive() and not w.frozen_until]
        if kind in ("kill", "freeze") and not live:
            kind = "scale"
        self.faults[kind] += 1
        if kind == "kill":
            victim = self.rng.choice(live)
            cold = self.rng.random() < 0.5
            self.progress(f"  fault: kill -9 {victim.name}, restart {'cold' if cold else 'warm'}")
            victim.kill()
            if cold:
                shutil.rmtree(self.scratch / victim.name, ignore_errors=True)
                (self.scratch / victim.name).mkdir()
            victim.start()
        elif kind == "freeze":
            victim = self.rng.choice(live)
            seconds = self.rng.uniform(3, 9)
            self.progress(f"  fault: freeze {victim.name} for {seconds:.1f} s")
            victim.freeze(seconds)
        elif kind == "scale":
            if len(self.workers) < self.max_workers:
                worker = self._engine_worker(len(self.workers)).start()
                self.workers.append(worker)
                self.progress(f"  fault: add {worker.name} ({len(self.workers)} workers)")
            else:
                leaving = self.workers.pop()
                self.progress(f"  fault: stop {leaving.name} ({len(self.workers)} workers)")
                leaving.stop()
        elif kind == "broker":
            self.progress("  fault: restart the broker")
            self.broker.down()
            time.sleep(self.rng.uniform(1, 3))
            self.broker.up()
        else:
            self.progress("  fault: kill -9 the job worker, restart it")
            self.job_worker.kill()
            self.job_worker.start()

    # -- consolidation --------------------------------------------------------------------------

    def consolidate(self) -> ChildProcess:
        """Stop every engine worker but the first, (re)started if need be; the first."""
        first, *others = self.workers
        for worker in others:
            worker.stop()
        if not first.alive():
            first.start()
        self.workers = [first]
        return first

    def wait_for_owner(
        self, worker: ChildProcess, partitions: int, wait: Callable[[float], object]
    ) -> None:
        """Until `worker` owns every partition, as its own log says, calling `wait(seconds)`
        between looks. Meanwhile whatever exited is restarted (a worker may exit on an error
        after a broker restart); a worker that still does not own everything after
        `OWNER_TIMEOUT_S` is sent SIGABRT, so Python's faulthandler writes every thread's
        stack to its log, showing where it was stuck."""
        wanted = set(range(partitions))
        deadline = time.monotonic() + OWNER_TIMEOUT_S
        while time.monotonic() < deadline:
            self.supervise()
            if owned(worker.log.read_text(errors="replace")) == wanted:
                wait(3.0)  # let it finish what it took over
                return
            wait(0.5)
        worker.signal(signal.SIGABRT)
        raise PartitaError(
            f"{worker.name} did not take every partition within {OWNER_TIMEOUT_S:g} s; its"
            f" threads' stacks are at the end of {worker.log}"
        )


_OWNERSHIP = re.compile(
    r"partita\.worker: (assigned|revoked) partitions \[([\d, ]*)\]|(Worker joining group)"
)


def owned(log: str) -> set[int]:
    """The partitions a worker owns according to its log: the last `assigned partitions`
    line minus those revoked since, empty again after the process (re)started. Only the
    worker's own lines count: other lines mention partitions too (librdkafka, refusals)."""
    partitions: set[int] = set()
    for match in _OWNERSHIP.finditer(log):
        kind, listed, restarted = match.groups()
        if restarted:
            partitions = set()
            continue
        numbers = {int(n) for n in listed.split(",") if n.strip()}
        partitions = numbers if kind == "assigned" else partitions - numbers
    return partitions
