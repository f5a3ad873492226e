"""One local Kafka broker (combined KRaft broker + controller) managed by `partita kafka`.

Files under `<home>/kafka/`: `server.properties`, `log4j2.properties`, `data/` (KRaft storage,
kept across `down`/`up` so a restart is fast), `broker.log`, and `broker.json` describing the
running process. The broker is a detached process: it outlives the command that started it and
is stopped by `down`.

Single-node settings make transactions work: the offsets and transaction-state topics get one
replica and `min.isr=1`; without them `init_transactions()` never completes.

A broker that has just started answers metadata requests a second or two before its group and
transaction coordinators do: `up` waits for those too (`partita.localkafka.coordinators`), so
that the first clients do not meet `Coordinator load in progress` and librdkafka's line per
retry.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from partita.config import KafkaRole
from partita.errors import PartitaError
from partita.localkafka.coordinators import coordinator_probes
from partita.localkafka.credentials import write_private
from partita.localkafka.distribution import KafkaDistribution, require_java
from partita.log.admin import answers_metadata, port_open
from partita.log.security import KafkaAccess

_READY_TIMEOUT_S = 120.0
_COORDINATORS_TIMEOUT_S = 60.0
_PROBE_TIMEOUT_S = 5.0
_STOP_TIMEOUT_S = 60.0


class BrokerError(PartitaError):
    """The local broker could not be started or stopped; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class BrokerStatus:
    """What `partita kafka status` reports."""

    running: bool
    bootstrap: str
    pid: int | None
    log_file: Path
    reused: bool = False
    started_in_s: float | None = None


@dataclass(frozen=True, slots=True)
class _RunState:
    pid: int
    port: int
    controller_port: int
    version: str
    mtls_port: int | None = None
    """The secured broker's mutual-TLS listener (`partita.localkafka.secure`)."""

    @property
    def ports(self) -> tuple[int, int, int | None]:
        return (self.port, self.controller_port, self.mtls_port)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def _plain(bootstrap: str) -> KafkaAccess:
    """The local broker's plaintext listener, as its operator sees it."""
    return KafkaAccess(bootstrap=bootstrap, role=KafkaRole.OPERATOR)


def _kafka_uuid() -> str:
    """A cluster id in Kafka's format: URL-safe base64 of 16 random bytes, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():  # guard against a recycled pid
        try:
            return b"kafka.Kafka" in cmdline.read_bytes()
        except OSError:
            return False
    return True


class LocalBroker:
    """Start, stop and inspect the local broker of one PARTITA_HOME.

    A subclass with another listener layout (`SecureLocalBroker`) overrides the hooks under
    "what this broker is"; starting, waiting and stopping are the same for both."""

    folder = "kafka"
    down_command = "partita kafka down"
    """The command that stops this broker, for the advice in error messages."""

    def __init__(
        self,
        home: Path,
        port: int,
        controller_port: int,
        *,
        heap: str = "-Xms256m -Xmx512m",
        internal_partitions: int = 3,
        distribution: KafkaDistribution | None = None,
    ) -> None:
        self.home = home
        self.port = port
        self.controller_port = controller_port
        self.heap = heap
        self.internal_partitions = internal_partitions
        self.dir = home / self.folder
        self.data_dir = self.dir / "data"
        self.log_file = self.dir / "broker.log"
        self.state_file = self.dir / "broker.json"
        self.distribution = distribution or KafkaDistribution(home)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- what this broker is ------------------------------------------------------------------

    def _ports(self) -> dict[str, int]:
        """The ports it listens on, keyed by the setting that chooses each."""
        return {"PARTITA_KAFKA_PORT": self.port, "PARTITA_CONTROLLER_PORT": self.controller_port}

    def _run_state(self, pid: int) -> _RunState:
        return _RunState(pid, self.port, self.controller_port, self.distribution.version)

    def _probe(self, bootstrap: str) -> KafkaAccess:
        """How the readiness probe and `status` reach the broker."""
        return _plain(bootstrap)

    def _prepare(self, progress: Callable[[str], None]) -> None:
        """Anything the broker needs before its configuration is written (nothing here)."""

    def _listeners(self) -> str:
        """The listener and security part of `server.properties`."""
        return f"""\
listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
"""

    def _format_args(self) -> list[str]:
        """Extra `StorageTool format` arguments (none here)."""
        return []

    # -- inspection ---------------------------------------------------------------------------

    def _read_state(self) -> _RunState | None:
        try:
            return _RunState(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def status(self) -> BrokerStatus:
        """Whether this home's broker process runs and answers, and where."""
        state = self._read_state()
        if state is not None and _pid_alive(state.pid):
            return BrokerStatus(
                running=answers_metadata(self._probe(state.bootstrap), timeout=3.0),
                bootstrap=state.bootstrap,
                pid=state.pid,
                log_file=self.log_file,
            )
        return BrokerStatus(
            running=False, bootstrap=self.bootstrap, pid=None, log_file=self.log_file
        )

    # -- start --------------------------------------------------------------------------------

    def up(self, progress: Callable[[str], None] = lambda _msg: None) -> BrokerStatus:
        """Start the broker, or reuse the one already running from this home.

        Returns once the broker answers metadata requests. Raises BrokerError when a port is
        taken by something else or the JVM exits during start-up (with the log's tail).
        """
        state = self._read_state()
        if state is not None and _pid_alive(state.pid):
            if state.ports != self._run_state(state.pid).ports:
                raise BrokerError(
                    f"a local broker from {self.dir} already runs at {state.bootstrap}"
                    f" (controller port {state.controller_port}); run `{self.down_command}` before"
                    " starting it on other ports"
                )
            if answers_metadata(self._probe(state.bootstrap), timeout=5.0):
                return BrokerStatus(True, state.bootstrap, state.pid, self.log_file, reused=True)
            progress(f"Broker process {state.pid} is alive but not answering yet; waiting...")
            self._wait_ready(state.pid, time.monotonic())
            self._wait_for_coordinators(state.pid, progress)
            return BrokerStatus(True, state.bootstrap, state.pid, self.log_file, reused=True)

        for name, port in self._ports().items():
            if port_open("127.0.0.1", port):
                raise BrokerError(
                    f"port {port} on 127.0.0.1 is already in use by another process. Stop it,"
                    f" choose another port with {name}, or, if it is a Kafka cluster you want to"
                    " use, set KAFKA_BOOTSTRAP_SERVERS to its address."
                )

        require_java()
        self.distribution.ensure(progress)
        started = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        self._prepare(progress)
        self._write_config()
        self._format_storage(progress)
        progress(f"Starting Kafka {self.distribution.version} on {self.bootstrap}...")
        pid = self._spawn()
        self.state_file.write_text(json.dumps(asdict(self._run_state(pid))))
        self._wait_ready(pid, started)
        self._wait_for_coordinators(pid, progress)
        return BrokerStatus(
            True, self.bootstrap, pid, self.log_file, started_in_s=time.monotonic() - started
        )

    def _write_config(self) -> None:
        n = self.internal_partitions
        properties = f"""\
# Written by `partita kafka up`; regenerated on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{self.controller_port}
{self._listeners()}log.dirs={self.data_dir}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions={n}
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions={n}
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
message.max.bytes=8388608
"""
        write_private(self.dir / "server.properties", properties)
        (self.dir / "log4j2.properties").write_text(
            """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = STDOUT
logger.requests.name = kafka.request.logger
logger.requests.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
"""
        )

    def _java(self, main: str, *args: str) -> list[str]:
        return [
            "java",
            *self.heap.split(),
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.dir}",
            "-cp",
            self.distribution.classpath,
            main,
            *args,
        ]

    def _format_storage(self, progress: Callable[[str], None]) -> None:
        if (self.data_dir / "meta.properties").is_file():
            return
        progress(f"Formatting KRaft storage in {self.data_dir}...")
        cmd = self._java(
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={_kafka_uuid()}",  # one argument: an id may begin with "-"
            "-c",
            str(self.dir / "server.properties"),
            *self._format_args(),
        )
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BrokerError(
                f"formatting KRaft storage failed (exit {result.returncode}):\n"
                f"{result.stdout}{result.stderr}"
            )

    def _spawn(self) -> int:
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                self._java("kafka.Kafka", str(self.dir / "server.properties")),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,  # outlive the CLI; Ctrl-C in the shell does not kill it
            )
        return process.pid

    def _exited(self, pid: int) -> BrokerError | None:
        """The error to raise when the broker process has exited during start-up."""
        if _not_exited(pid):
            return None
        _reap(pid)
        return BrokerError(
            f"the Kafka broker exited during start-up; last lines of {self.log_file}:\n"
            + self._log_tail()
        )

    def _wait_ready(self, pid: int, started: float) -> None:
        deadline = started + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if (exited := self._exited(pid)) is not None:
                raise exited
            if port_open("127.0.0.1", self.port) and answers_metadata(
                self._probe(self.bootstrap), 2.0
            ):
                return
            time.sleep(0.25)
        raise BrokerError(
            f"the Kafka broker did not answer within {_READY_TIMEOUT_S:.0f} s; it is left running"
            f" (pid {pid}) so you can inspect {self.log_file}; `{self.down_command}` stops it.\n"
            + self._log_tail()
        )

    def _wait_for_coordinators(self, pid: int, progress: Callable[[str], None]) -> None:
        """Until the coordinator of every partition of `__consumer_offsets` answers for a
        group and that of every partition of `__transaction_state` gives a transactional
        producer its id (`coordinators.coordinator_probes`). A broker just started answers metadata
        before it has created or loaded those topics; a client that comes then (an idempotent
        producer, a group member) meets `Coordinator load in progress` and librdkafka logs its
        every retry to the user. The probes' own retries go nowhere; one progress line says
        what the wait is for."""
        progress("Waiting for the broker's group and transaction coordinators...")
        access = self._probe(self.bootstrap)
        probes = coordinator_probes(access, self.internal_partitions)
        deadline = time.monotonic() + _COORDINATORS_TIMEOUT_S
        for probe in probes:
            while (problem := probe(_PROBE_TIMEOUT_S)) is not None:
                if (exited := self._exited(pid)) is not None:
                    raise exited
                if time.monotonic() >= deadline:
                    raise BrokerError(
                        f"the Kafka broker's group and transaction coordinators did not answer"
                        f" within {_COORDINATORS_TIMEOUT_S:.0f} s (last: {problem}); it is left"
                        f" running (pid {pid}) so you can inspect {self.log_file};"
                        f" `{self.down_command}` stops it.\n" + self._log_tail()
                    )
                time.sleep(0.25)

    def _log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log written)"

    # -- stop ---------------------------------------------------------------------------------

    def down(self, *, wipe: bool = False) -> bool:
        """Stop the broker cleanly (SIGTERM, then SIGKILL after a bound). True if one was running.

        With `wipe`, the broker's data (all topics) is deleted too.
        """
        state = self._read_state()
        was_running = False
        if state is not None and _pid_alive(state.pid):
            was_running = True
            _signal_group(state.pid, signal.SIGTERM)
            deadline = time.monotonic() + _STOP_TIMEOUT_S
            while _pid_alive(state.pid) and time.monotonic() < deadline:
                _reap(state.pid)
                time.sleep(0.1)
            if _pid_alive(state.pid):
                _signal_group(state.pid, signal.SIGKILL)
                _reap(state.pid)
        self.state_file.unlink(missing_ok=True)
        if wipe and self.data_dir.exists():
            shutil.rmtree(self.data_dir)
        return was_running


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _not_exited(pid: int) -> bool:
    """The process exists and is not a zombie. Unlike `_pid_alive` it does not look for
    kafka.Kafka in the command line: a broker spawned a moment ago may not have exec'd java yet,
    and a young child must not be mistaken for a dead broker."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return _pid_alive(pid)  # no /proc (not Linux): the portable check
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _reap(pid: int) -> None:
    """Collect the exit status when the broker is our own child (tests), so it leaves no zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
