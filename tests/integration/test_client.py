"""The client and the CLI commands against a real worker: deploy, create (and await), work on
jobs, cancel, and readable rejections."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator

import pytest

from partita.cli import main
from partita.client import Client, CommandRejectedError
from partita.config import Config
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.intents import (
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    ProcessIntent,
)
from partita.protocol.keys import kafka_partition_of_key
from partita.protocol.records import Record
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import (
    BUILTIN_ENGINE,
    WorkerProcess,
    create_topics,
    read_log,
    wait_until,
)

pytestmark = pytest.mark.kafka

ELEMENT_COMPLETED = ProcessInstanceIntent.ELEMENT_COMPLETED


@pytest.fixture(scope="module")
def running(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Config, list[str]]]:
    home = tmp_path_factory.mktemp("client")
    config = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"c{uuid.uuid4().hex[:8]}", home=home
    )
    create_topics(config)
    worker = WorkerProcess(config, home, engine=BUILTIN_ENGINE).start()
    flags = [
        "--bootstrap-servers",
        kafka_bootstrap,
        "--namespace",
        config.namespace,
        "--timeout",
        "60",
    ]
    yield config, flags
    assert worker.stop() == 0, worker.tail()
    verify = worker.verify_replay()
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_deploy_create_and_work_from_the_cli(
    running: tuple[Config, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """What the CLI says happened is what the log holds: the instance it names was created with
    the given variables, its job completed with the worker's variables, and it completed."""
    config, flags = running
    assert main(["deploy", str(BPMN_FIXTURES / "one-task.bpmn"), *flags]) == 0
    deployed = re.fullmatch(r"one-task version 1 key (\d+)\n", capsys.readouterr().out)
    assert deployed is not None
    definition = int(deployed.group(1))
    # the only definition of one-task on the log (on every partition) is the one the CLI named
    assert _definitions(config, "one-task") == {(definition, 1)}
    assert main(["deploy", str(BPMN_FIXTURES / "one-task.bpmn"), *flags]) == 0
    assert (
        capsys.readouterr().out
        == f"one-task version 1 key {definition} (unchanged: an identical resource is deployed)\n"
    )
    assert _definitions(config, "one-task") == {(definition, 1)}  # no second version
    assert main(["create", "one-task", "--vars", '{"orderId": 7}', *flags]) == 0
    said = re.fullmatch(r"instance (\d+) of one-task version 1 created\n", capsys.readouterr().out)
    assert said is not None
    instance = int(said.group(1))
    assert main(["jobs", "work", "work", "--count", "1", "--vars", '{"done": true}', *flags]) == 0
    assert "1 jobs of type work completed" in capsys.readouterr().out

    def of_instance() -> list[Record]:
        log = read_log(config).partitions[kafka_partition_of_key(instance)]
        return [r for r in log if getattr(r.value, "process_instance_key", None) == instance]

    wait_until(
        lambda: any(r.key == instance and r.intent is ELEMENT_COMPLETED for r in of_instance()),
        30,
        f"instance {instance} to complete",
    )
    records = of_instance()
    (created,) = [r for r in records if r.intent is ProcessInstanceCreationIntent.CREATED]
    assert json.loads(created.value.variables) == {"orderId": 7}
    (job,) = [r for r in records if r.intent is JobIntent.COMPLETED]
    assert json.loads(job.value.variables) == {"done": True}
    assert [r.key for r in records if r.intent is ELEMENT_COMPLETED][-1] == instance


def _definitions(config: Config, process_id: str) -> set[tuple[int, int]]:
    """(key, version) of the PROCESS CREATED events of `process_id` on the log."""
    return {
        (r.value.process_definition_key, r.value.version)
        for records in read_log(config).partitions.values()
        for r in records
        if r.intent is ProcessIntent.CREATED and r.value.bpmn_process_id == process_id
    }


def test_create_and_await_the_result_while_a_worker_completes_the_job(
    running: tuple[Config, list[str]],
) -> None:
    config, _ = running
    with Client(config, timeout=60) as client:
        client.deploy(BPMN_FIXTURES / "one-task.bpmn")

    def work() -> None:
        with Client(config, timeout=60) as worker:
            for _ in range(100):
                jobs = worker.activate_jobs("work")
                for key, _job in jobs:
                    worker.complete_job(key, {"answer": 42})
                if jobs:
                    return

    thread = threading.Thread(target=work)
    thread.start()
    with Client(config, timeout=60) as client:
        result = client.create_instance(
            "one-task", {"q": "?"}, await_result=True, fetch_variables=["answer"]
        )
    thread.join(60)
    assert result.value.variables == '{"answer":42}'


def test_rejections_raise_with_type_and_reason_and_the_cli_prints_them(
    running: tuple[Config, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    config, flags = running
    with Client(config, timeout=60) as client, pytest.raises(CommandRejectedError) as raised:
        client.create_instance("no-such-process")
    assert raised.value.rejection_type is RejectionType.NOT_FOUND
    missing = 2251799813685248
    assert main(["cancel", str(missing), *flags]) == 1
    err = capsys.readouterr().err
    assert "rejected (NOT_FOUND)" in err and "no active process instance" in err
    # the rejection the CLI printed is the one on the log
    (rejection,) = [
        r
        for r in read_log(config).partitions[kafka_partition_of_key(missing)]
        if r.record_type is RecordType.COMMAND_REJECTION and r.key == missing
    ]
    assert rejection.intent is ProcessInstanceIntent.CANCEL
    assert rejection.rejection_type is RejectionType.NOT_FOUND
    assert rejection.rejection_reason in err
