"""The user-facing examples in examples/, end to end on the real broker (plaintext).

A real engine worker runs; the Java job worker (examples/java-worker) works `price` jobs, the
Node.js job worker (examples/node/worker.js) works `notify` jobs, and the Node.js producer
deploys examples/order-pricing.bpmn and creates instances that await their results
(tests/support/example_programs.py has the walkthrough). A process that is not deployed is rejected,
and a Kafka properties file that cannot be read is named. The same walkthrough on the secured
broker is in test_examples_secured.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.cli import main
from partita.config import Config
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.intents import ProcessInstanceCreationIntent
from tests.support.example_programs import (
    Access,
    answered_commands,
    cluster_flags,
    run_producer,
    walkthrough,
)
from tests.support.paths import EXAMPLES
from tests.support.worker_processes import engine_namespace

pytestmark = [pytest.mark.kafka, pytest.mark.interop]


@pytest.fixture(scope="module")
def engine(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    """A namespace with push topics for both job types and a real engine worker; at the end the
    worker stops cleanly and its state equals a replay of the log."""
    with engine_namespace(kafka_bootstrap, tmp_path_factory.mktemp("examples"), "x") as config:
        flags = ["--bootstrap-servers", kafka_bootstrap, "--namespace", config.namespace]
        jobs = ["--job-type", "price", "--job-type", "notify"]
        assert main(["topics", "apply", *jobs, *flags]) == 0
        yield config


def test_java_and_node_workers_complete_every_instance_the_producer_awaits(
    engine: Config, java_worker: list[str], node_project: Path, tmp_path: Path
) -> None:
    plain = Access(cluster_flags(engine))
    walkthrough(engine, java_worker, node_project, tmp_path, java=plain, node=plain, producer=plain)


def test_an_unknown_process_is_rejected_not_found(engine: Config, node_project: Path) -> None:
    produced = run_producer(
        node_project, Access(cluster_flags(engine)), "--process", "no-such-process", "--count", "1"
    )
    assert produced.returncode == 1, produced.stdout + produced.stderr
    assert produced.stdout.splitlines() == [
        "order 1: rejected NOT_FOUND process 'no-such-process' is not deployed",
        "0 of 1 instances completed",
    ]
    (asked,) = [
        a
        for a in answered_commands(engine)
        if getattr(a.sent.value, "bpmn_process_id", None) == "no-such-process"
        and a.sent.intent is ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT
    ]
    (rejection,) = asked.results
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert rejection.rejection_type is RejectionType.NOT_FOUND
    assert rejection.intent is ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT


def test_a_kafka_properties_file_that_cannot_be_read_is_named(
    java_worker: list[str], node_project: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-client.properties"
    env = {**os.environ, "PARTITA_KAFKA_CONFIG": str(missing)}
    programs = [
        (java_worker, EXAMPLES / "java-worker", "price worker"),
        (["node", "producer.js"], node_project, "producer"),
        (["node", "worker.js"], node_project, "node worker"),
    ]
    for cmd, cwd, name in programs:
        result = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert (result.returncode, result.stderr.strip()) == (
            1,
            f"{name}: PARTITA_KAFKA_CONFIG={missing}: cannot read the Kafka client properties"
            " file (no such file)",
        ), result.stdout
