"""The asyncio client and the typed rejections on the real broker: every command of the client
answered through the reply topic, many in flight at once, each rejection type raised as its own
exception, and a timeout when no engine answers."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.client import (
    AlreadyExistsError,
    AsyncClient,
    Client,
    CommandRejectedError,
    InvalidStateError,
    NotFoundError,
    ReplyTimeoutError,
)
from partita.config import Config
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.intents import (
    IncidentIntent,
    JobIntent,
    MessageIntent,
    ProcessInstanceIntent,
    VariableDocumentIntent,
)
from partita.protocol.values import IncidentValue, JobValue
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import (
    create_topics,
    engine_namespace,
    read_log,
    wait_until,
)

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def config(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    with engine_namespace(kafka_bootstrap, tmp_path_factory.mktemp("asyncclient"), "a") as config:
        yield config


async def _work(client: AsyncClient, job_type: str, count: int) -> int:
    """Complete `count` jobs of `job_type` by polling, doubling their `n`."""
    done = 0
    while done < count:
        jobs = await client.activate_jobs(job_type, worker="async-test")
        await asyncio.gather(
            *(
                client.complete_job(key, {"doubled": json.loads(job.variables)["n"] * 2})
                for key, job in jobs
            )
        )
        done += len(jobs)
        if not jobs:
            await asyncio.sleep(0.1)
    return done


def test_async_client_runs_instances_concurrently_to_completion(config: Config) -> None:
    async def scenario() -> list[int]:
        async with await AsyncClient.connect(config, timeout=60) as client:
            deployed = await client.deploy(
                ("one-task.bpmn", (BPMN_FIXTURES / "one-task.bpmn").read_bytes())
            )
            assert deployed.record_type is RecordType.EVENT
            creations = [
                client.create_instance("one-task", {"n": n}, await_result=True) for n in range(20)
            ]
            *results, worked = await asyncio.gather(*creations, _work(client, "work", 20))
            assert worked == 20
            return sorted(json.loads(r.value.variables)["doubled"] for r in results)

    assert asyncio.run(scenario()) == [n * 2 for n in range(20)]


def test_each_rejection_type_raises_its_own_exception(config: Config) -> None:
    async def scenario() -> None:
        async with await AsyncClient.connect(config, timeout=60) as client:
            await client.deploy(
                ("typed-task.bpmn", (BPMN_FIXTURES / "typed-task.bpmn").read_bytes())
            )
            with pytest.raises(NotFoundError) as unknown:
                await client.create_instance("no-such-process")
            assert "no-such-process" in unknown.value.reason
            assert unknown.value.rejection_type is RejectionType.NOT_FOUND
            with pytest.raises(NotFoundError):
                await client.complete_job(2251799813685248 + 12345)

            first = await client.publish_message("ping", "k-1", message_id="m-1", ttl_ms=60_000)
            assert first.intent is MessageIntent.PUBLISHED
            with pytest.raises(AlreadyExistsError) as duplicate:
                await client.publish_message("ping", "k-1", message_id="m-1", ttl_ms=60_000)
            assert "m-1" in duplicate.value.reason

            # a job failed with no retries left: an incident; the job refuses answers until
            # its retries are raised and the incident resolved
            await client.create_instance("typed-task", {"jobType": "fragile", "n": 1})
            jobs: tuple[tuple[int, JobValue], ...] = ()
            while not jobs:
                jobs = await client.activate_jobs("fragile", max_jobs=1)
            key = jobs[0][0]
            failed = await client.fail_job(key, retries=0, message="disk full")
            assert failed.intent is JobIntent.FAILED
            with pytest.raises(InvalidStateError):
                await client.complete_job(key)
            updated = await client.update_job_retries(key, 2)
            assert updated.intent is JobIntent.RETRIES_UPDATED
            incident = _incident_of(config, key)
            resolved = await client.resolve_incident(incident)
            assert resolved.intent is IncidentIntent.RESOLVED
            with pytest.raises(NotFoundError):
                await client.resolve_incident(incident)
            again: tuple[tuple[int, JobValue], ...] = ()
            while not again:
                again = await client.activate_jobs("fragile", max_jobs=1)
            assert again[0][0] == key and again[0][1].retries == 2
            completed = await client.complete_job(key, {"ok": True})
            assert completed.intent is JobIntent.COMPLETED

    asyncio.run(scenario())


def _incident_of(config: Config, job_key: int) -> int:
    found: list[int] = []

    def created() -> bool:
        found[:] = [
            record.key
            for records in read_log(config).partitions.values()
            for record in records
            if record.intent is IncidentIntent.CREATED
            and isinstance(record.value, IncidentValue)
            and record.value.job_key == job_key
        ]
        return bool(found)

    wait_until(created, 30, f"the incident of job {job_key}")
    return found[0]


def test_set_variables_and_cancel_with_the_sync_client(config: Config) -> None:
    with Client(config, timeout=60) as client:
        client.deploy(BPMN_FIXTURES / "message-catch.bpmn")
        created = client.create_instance("wait-payment", {"orderId": "o-1"})
        instance = created.value.process_instance_key  # type: ignore[union-attr]
        updated = client.set_variables(instance, {"note": "rush"})
        assert updated.intent is VariableDocumentIntent.UPDATED
        assert json.loads(updated.value.variables) == {"note": "rush"}  # type: ignore[union-attr]
        cancelled = client.cancel_instance(instance)
        assert cancelled.intent is ProcessInstanceIntent.ELEMENT_TERMINATING
        with pytest.raises(NotFoundError):
            client.cancel_instance(instance)
        with pytest.raises(CommandRejectedError):
            client.set_variables(instance, {"late": True})


def test_no_engine_means_a_reply_timeout_that_says_what_to_check(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    lonely = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"z{uuid.uuid4().hex[:8]}", home=tmp_path
    )
    create_topics(lonely)

    async def scenario() -> None:
        async with await AsyncClient.connect(lonely, timeout=2) as client:
            await client.create_instance("anything")

    with pytest.raises(ReplyTimeoutError) as raised:
        asyncio.run(scenario())
    assert "is a `partita worker` running" in str(raised.value)
