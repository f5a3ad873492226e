"""`partita worker --processes 2` against the real broker: the children share the log's
partitions as members of the engine group, a child killed with -9 is restarted and nothing is
lost or done twice, SIGTERM stops them all cleanly, and a child that cannot start makes the
supervisor give up naming the cause."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import engine_group
from partita.log.security import kafka_access
from tests.support.paths import ROOT
from tests.support.worker_processes import (
    TEST_ENGINE,
    Load,
    WorkerProcess,
    assert_exactly_once,
    create_topics,
    creation,
    produce,
    wait_answered,
    wait_until,
)

pytestmark = pytest.mark.kafka

_STARTED = re.compile(r"\[supervisor\] started (worker-\d+) \(pid (\d+)\)")


class Supervised(WorkerProcess):
    """`partita worker --processes N` in its own process: the supervisor and its children."""

    def __init__(
        self, config: Config, home: Path, processes: int = 2, engine: str = TEST_ENGINE
    ) -> None:
        super().__init__(config, home, "supervisor", engine=engine)
        self.processes = processes

    def start(self) -> Supervised:
        self.home.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "partita.cli",
                    "worker",
                    *self.args(),
                    "--processes",
                    str(self.processes),
                ],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        return self

    def children(self) -> dict[str, int]:
        """The pid each child was last started with, from the supervisor's lines."""
        return {name: int(pid) for name, pid in _STARTED.findall(self.log.read_text())}


def _config(bootstrap: str, home: Path) -> Config:
    config = Config(
        bootstrap_servers=bootstrap,
        namespace=f"p{uuid.uuid4().hex[:8]}",
        home=home,
        partitions=2,
    )
    create_topics(config)
    return config


def _owners(config: Config) -> list[list[int]]:
    """The log partitions of each member of the engine group, as the group assigned them."""
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    group = engine_group(config.namespace)
    description = admin.describe_consumer_groups([group], request_timeout=10)[group].result(15)
    return sorted(
        sorted(tp.partition for tp in m.assignment.topic_partitions if tp.topic == config.log_topic)
        for m in description.members
    )


def _one_partition_each(config: Config, supervised: Supervised) -> None:
    wait_until(
        lambda: _owners(config) == [[0], [1]],
        120,
        "two members of the engine group owning one log partition each",
        supervised.tail,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(supervised: Supervised, config: Config) -> None:
    assert supervised.stop(timeout=120) == 0, supervised.tail()
    assert "[supervisor] every worker stopped" in supervised.tail(), supervised.tail()
    result = supervised.verify_replay()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": equal") == config.partitions, result.stdout


def test_two_processes_each_own_one_partition_and_process_both(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    supervised = Supervised(config, tmp_path).start()
    try:
        _one_partition_each(config, supervised)
        produce(config, [(n % 2, creation(n)) for n in range(40)])
        log = wait_answered(config, 40, 120, supervised)
        assert assert_exactly_once(log, 2) == 40
        assert len(log.commands(0)) == len(log.commands(1)) == 20
        tail = supervised.tail(400)
        owners = {
            name: partitions
            for name, partitions in re.findall(
                r"\[(worker-\d)\] .* assigned partitions \[(\d)\]", tail
            )
        }
        assert sorted(owners.values()) == ["0", "1"], tail  # each child says which it owns
    except BaseException:
        supervised.kill()  # its children get SIGTERM from the kernel
        raise
    _stop(supervised, config)


def test_a_child_killed_with_9_is_restarted_and_nothing_is_lost_or_repeated(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    supervised = Supervised(config, tmp_path).start()
    try:
        _one_partition_each(config, supervised)
        with Load(config, per_tick=2, tick=0.05) as load:
            wait_until(lambda: load.sent >= 100, 60, "instances created before the kill")
            victim = supervised.children()["worker-1"]
            os.kill(victim, 9)
            wait_until(
                lambda: supervised.children()["worker-1"] != victim,
                60,
                "the supervisor to start worker-1 again",
                supervised.tail,
            )
            assert f"worker-1 (pid {victim}) was killed by SIGKILL" in supervised.tail(400)
            assert "restarting it in 1 s" in supervised.tail(400)
            _one_partition_each(config, supervised)
            sent_at_restart = load.sent
            wait_until(lambda: load.sent >= sent_at_restart + 100, 60, "instances created after it")
            sent = load.stop()
        log = wait_answered(config, sent, 180, supervised)
        assert assert_exactly_once(log, 2) == sent
        pids = list(supervised.children().values())
    except BaseException:
        supervised.kill()
        raise
    _stop(supervised, config)
    assert not any(_alive(pid) for pid in pids)


def test_sigterm_stops_every_child_cleanly_and_exits_0(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    supervised = Supervised(config, tmp_path).start()
    try:
        _one_partition_each(config, supervised)
        produce(config, [(n % 2, creation(n)) for n in range(10)])
        wait_answered(config, 10, 120, supervised)
        children = supervised.children()
    except BaseException:
        supervised.kill()
        raise
    _stop(supervised, config)
    assert sorted(children) == ["worker-1", "worker-2"]
    assert not any(_alive(pid) for pid in children.values())
    tail = supervised.tail(200)
    assert tail.count("Worker stopped.") == 2, tail  # each left the group by itself
    assert "SIGKILL" not in tail, tail
    wait_until(lambda: _owners(config) == [], 30, "the engine group to be empty")


def test_a_child_that_cannot_start_makes_the_supervisor_give_up_naming_why(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    supervised = Supervised(config, tmp_path, engine="tests.nowhere:build_engine").start()
    assert supervised.process is not None
    try:
        code = supervised.process.wait(300)  # 6 ends, 1 + 2 + 4 + 8 + 16 s apart
    except subprocess.TimeoutExpired:
        supervised.kill()
        raise AssertionError(supervised.tail()) from None
    tail = supervised.tail(60)
    assert code == 1, tail
    error = tail.splitlines()[-1]
    assert re.match(
        r"partita: error: worker-\d \(pid \d+\) exited with code 1: it ended 6 times within"
        r" 300 s, giving up; its last line: partita: error: cannot load the engine factory"
        r" 'tests.nowhere:build_engine'",
        error,
    ), tail
    assert "restarting it in 16 s (end 5 of at most 5 within 300 s)" in tail, tail
    assert not any(_alive(pid) for pid in supervised.children().values())
