"""The client and the CLI commands against a real worker: deploy, create (and await), work on
jobs, cancel, and readable rejections."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cli import main
from engine.client import Client, CommandRejectedError
from engine.config import Config
from engine.protocol.enums import RejectionType
from tests.integration.workers import BUILTIN_ENGINE, WorkerProcess, create_topics

pytestmark = pytest.mark.kafka

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bpmn"


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
    _, flags = running
    assert main(["deploy", str(FIXTURES / "one-task.bpmn"), *flags]) == 0
    assert "one-task version 1 key " in capsys.readouterr().out
    assert main(["deploy", str(FIXTURES / "one-task.bpmn"), *flags]) == 0
    assert "(unchanged: an identical resource is deployed)" in capsys.readouterr().out
    assert main(["create", "one-task", "--vars", '{"orderId": 7}', *flags]) == 0
    assert "version 1 created" in capsys.readouterr().out
    assert main(["jobs", "work", "work", "--count", "1", "--vars", '{"done": true}', *flags]) == 0
    assert "1 jobs of type work completed" in capsys.readouterr().out


def test_create_and_await_the_result_while_a_worker_completes_the_job(
    running: tuple[Config, list[str]],
) -> None:
    config, _ = running
    with Client(config, timeout=60) as client:
        client.deploy(FIXTURES / "one-task.bpmn")

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
    assert main(["cancel", "2251799813685248", *flags]) == 1
    err = capsys.readouterr().err
    assert "rejected (NOT_FOUND)" in err and "no active process instance" in err
