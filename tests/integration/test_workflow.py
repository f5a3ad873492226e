"""The built-in workflow engine on the real broker: deploy (distributed to every partition),
create instances on each partition, complete their jobs, and replay to the same state."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from partita.config import Config
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import (
    DeploymentIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    ProcessIntent,
)
from partita.protocol.records import command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    JobValue,
    ProcessInstanceCreationValue,
)
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import (
    BUILTIN_ENGINE,
    WorkerProcess,
    create_topics,
    produce,
    read_log,
    wait_until,
)

pytestmark = [pytest.mark.kafka, pytest.mark.codec]  # also run with the pure-Python codec


def test_deploy_create_and_complete_on_every_partition(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"wf{uuid.uuid4().hex[:8]}", home=tmp_path
    )
    create_topics(config)
    worker = WorkerProcess(config, tmp_path, engine=BUILTIN_ENGINE).start()
    resource = DeploymentResource("one-task.bpmn", (BPMN_FIXTURES / "one-task.bpmn").read_bytes())
    produce(config, [(1, command(DeploymentIntent.CREATE, DeploymentValue(resources=(resource,))))])

    def distributed() -> bool:
        log = read_log(config)
        return all(
            any(r.intent is ProcessIntent.CREATED for r in log.partitions[p]) for p in range(3)
        )

    wait_until(distributed, 60, "the process on every partition", worker.tail)

    creations = [
        (
            p,
            command(
                ProcessInstanceCreationIntent.CREATE,
                ProcessInstanceCreationValue(
                    bpmn_process_id="one-task", variables=json.dumps({"p": p})
                ),
            ),
        )
        for p in range(3)
    ]
    produce(config, creations)

    def jobs() -> list:  # type: ignore[type-arg]
        log = read_log(config)
        return [r for p in range(3) for r in log.partitions[p] if r.intent is JobIntent.CREATED]

    wait_until(lambda: len(jobs()) == 3, 60, "a job per instance", worker.tail)
    completions = [
        (
            p,
            command(
                JobIntent.COMPLETE, JobValue(variables=json.dumps({"done": True})), key=job.key
            ),
        )
        for p, job in enumerate(sorted(jobs(), key=lambda j: j.partition_id))
    ]
    produce(config, completions)

    def completed() -> int:
        log = read_log(config)
        return sum(
            1
            for p in range(3)
            for r in log.partitions[p]
            if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
            and r.value.bpmn_element_type is BpmnElementType.PROCESS
        )

    wait_until(lambda: completed() == 3, 60, "three completed instances", worker.tail)
    assert worker.stop() == 0, worker.tail()
    result = worker.verify_replay()
    assert result.returncode == 0 and result.stdout.count(": equal") == 3, (
        result.stdout + result.stderr
    )
