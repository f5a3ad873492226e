"""Push activation on the engine core: jobs of a type with a job topic are activated and
produced to that topic in the same batch, bounded per type; timed-out and failed jobs are
pushed again, and finishing one makes room for the next."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.processing.builtin import build_engine
from partita.processing.job.push import JobPush
from partita.protocol.enums import RejectionType
from partita.protocol.intents import DeploymentIntent, JobBatchIntent, JobIntent
from partita.protocol.records import Record, command
from partita.protocol.values import (
    PUSH_WORKER,
    DeploymentResource,
    DeploymentValue,
    JobBatchValue,
    JobValue,
)
from tests.support.memory import CODEC, MemoryEngine
from tests.support.paths import BPMN_FIXTURES
from tests.support.scenario_steps import complete, create, jobs_of, send

TOPIC = "mem.jobs.work"


def one_task_engine(tmp_path: Path, push: JobPush | None = None) -> MemoryEngine:
    """One partition with one-task.bpmn deployed, pushing with `push` (the engine's own when
    None: no job topic known)."""
    memory = MemoryEngine(build_engine(), tmp_path, partitions=1, job_push=push)
    value = DeploymentValue(
        resources=(
            DeploymentResource("one-task.bpmn", (BPMN_FIXTURES / "one-task.bpmn").read_bytes()),
        )
    )
    memory.send(0, command(DeploymentIntent.CREATE, value))
    memory.run()
    return memory


@pytest.fixture
def pushing(tmp_path: Path) -> Iterator[MemoryEngine]:
    push = JobPush(topics={"work": (TOPIC, 1)}, limit=2, timeout_ms=10_000)
    memory = one_task_engine(tmp_path, push)
    yield memory
    memory.assert_replay_matches(tmp_path)
    memory.close()


def pushed(engine: MemoryEngine) -> list[tuple[int, Record]]:
    """(message key, record) of everything on the job topic."""
    return [(int(m.key() or b"-1"), CODEC.decode(m.value())) for m in engine.kafka.log(TOPIC, 0)]


def test_jobs_are_pushed_with_variables_up_to_the_bound(pushing: MemoryEngine) -> None:
    first = create(pushing, "one-task", n=1)
    second = create(pushing, "one-task", n=2)
    third = create(pushing, "one-task", n=3)
    on_topic = pushed(pushing)
    assert len(on_topic) == 2  # the bound: two pushed, unfinished jobs of type `work`
    keys = [key for key, _ in on_topic]
    assert keys == [jobs_of(pushing, first)[0].key, jobs_of(pushing, second)[0].key]
    _, record = on_topic[0]
    assert record.intent is JobBatchIntent.ACTIVATED and record.value.worker == PUSH_WORKER
    (job,) = record.value.jobs
    assert json.loads(job.variables) == {"n": 1}
    assert job.deadline == record.timestamp + 10_000
    # the same event is on the log: replay knows the job is activated
    assert any(r.key == record.key for r in pushing.events(0))

    complete(pushing, jobs_of(pushing, first)[0])  # room for one more
    on_topic = pushed(pushing)
    assert len(on_topic) == 3 and on_topic[2][0] == jobs_of(pushing, third)[0].key


def test_timed_out_and_failed_pushed_jobs_are_pushed_again(pushing: MemoryEngine) -> None:
    instance = create(pushing, "one-task")
    (job,) = jobs_of(pushing, instance)
    pushing.advance(11)  # past the push deadline
    assert [r.intent for r in pushing.events(0) if r.key == job.key][-1] is JobIntent.TIMED_OUT
    assert [key for key, _ in pushed(pushing)] == [job.key, job.key]
    send(pushing, command(JobIntent.FAIL, JobValue(retries=2), key=job.key))
    assert [key for key, _ in pushed(pushing)] == [job.key] * 3
    complete(pushing, job)
    assert len(pushed(pushing)) == 3


def test_a_poll_cannot_use_the_push_worker_name(pushing: MemoryEngine) -> None:
    batch = JobBatchValue(type="work", worker=PUSH_WORKER, max_jobs_to_activate=1)
    (rejected,) = send(pushing, command(JobBatchIntent.ACTIVATE, batch))
    assert rejected.rejection_type is RejectionType.INVALID_ARGUMENT
    assert "reserved" in rejected.rejection_reason


def test_jobs_waiting_when_a_topic_appears_are_pushed(tmp_path: Path) -> None:
    push = JobPush(limit=10)
    memory = one_task_engine(tmp_path, push)
    instances = [create(memory, "one-task") for _ in range(3)]
    assert memory.kafka.log(TOPIC, 0) == []  # no topic yet: jobs wait for a poll
    push.topics["work"] = (TOPIC, 1)
    memory.machines[0].process((), catch_up=[(push, ["work"])])
    assert sorted(key for key, _ in pushed(memory)) == sorted(
        jobs_of(memory, i)[0].key for i in instances
    )
    memory.assert_replay_matches(tmp_path)
    memory.close()


def test_a_yielded_job_is_activatable_at_once_and_the_yield_pushes_nothing(
    pushing: MemoryEngine,
) -> None:
    instance = create(pushing, "one-task", n=1)
    (key, _record) = pushed(pushing)[0]
    (yielded,) = send(pushing, command(JobIntent.YIELD, JobValue(), key=key))
    assert yielded.intent is JobIntent.YIELDED and yielded.value.deadline == -1
    assert len(pushed(pushing)) == 1  # not pushed back by its own yield
    batch = JobBatchValue(type="work", worker="poller", timeout=1000, max_jobs_to_activate=5)
    (polled,) = send(pushing, command(JobBatchIntent.ACTIVATE, batch))
    assert polled.value.job_keys == (key,) and polled.value.jobs[0].worker == "poller"
    (again,) = send(pushing, command(JobIntent.YIELD, JobValue(), key=key))
    assert again.intent is JobIntent.YIELDED  # a polled job may be yielded too
    second = create(pushing, "one-task", n=2)  # the type's next push takes it along
    assert [k for k, _ in pushed(pushing)] == [key, key, jobs_of(pushing, second)[0].key]
    assert jobs_of(pushing, instance)[0].key == key


def test_only_an_activated_job_can_be_yielded(tmp_path: Path) -> None:
    memory = one_task_engine(tmp_path)
    instance = create(memory, "one-task")
    (job,) = jobs_of(memory, instance)
    (refused,) = send(memory, command(JobIntent.YIELD, JobValue(), key=job.key))
    assert refused.rejection_type is RejectionType.INVALID_STATE
    assert "only an activated job can be yielded" in refused.rejection_reason
    complete(memory, job)
    (gone,) = send(memory, command(JobIntent.YIELD, JobValue(), key=job.key))
    assert gone.rejection_type is RejectionType.NOT_FOUND
    memory.close()


def test_when_a_types_workers_leave_its_pushed_jobs_are_given_back(tmp_path: Path) -> None:
    push = JobPush(topics={"work": (TOPIC, 1)}, limit=2, timeout_ms=10_000)
    memory = one_task_engine(tmp_path, push)
    instances = [create(memory, "one-task", n=n) for n in range(2)]
    assert len(pushed(memory)) == 2  # pushed into a topic whose last worker then left
    assert push.topics_found({}) == ["work"]  # the workers' group went empty: a change
    memory.machines[0].process((), catch_up=[(push, ["work"])])
    yielded = [r for r in memory.events(0) if r.intent is JobIntent.YIELDED]
    assert sorted(r.key for r in yielded) == sorted(jobs_of(memory, i)[0].key for i in instances)
    batch = JobBatchValue(type="work", worker="poller", timeout=1000, max_jobs_to_activate=5)
    (polled,) = send(memory, command(JobBatchIntent.ACTIVATE, batch))
    assert sorted(polled.value.job_keys) == sorted(r.key for r in yielded)  # pollers take them
    memory.assert_replay_matches(tmp_path)
    memory.close()
