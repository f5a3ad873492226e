"""`partita analytics` on the real broker: an engine worker runs instances (completed by a job
worker, cancelled, left active, stuck in incidents, one incident resolved); the figures the
analytics serve as JSON, and print through `partita instances` / `partita incidents`, must
equal what the log says, computed here independently from the records. The analytics run with
a token (PARTITA_ANALYTICS_TOKEN): every request here carries it, and one test checks what a
request without it gets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from partita.cli import main
from partita.client import ActivatedJob, Client, JobWorker
from partita.config import Config
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import IncidentIntent, JobIntent, ProcessInstanceIntent
from tests.support.analytics_oracle import (
    close_to,
    expected_durations,
    expected_job_latencies,
    expected_open_incidents,
    expected_processes,
    log_events,
    nearest_rank,
)
from tests.support.local_kafka import free_port
from tests.support.paths import BPMN_FIXTURES, CONFORMANCE, ROOT
from tests.support.worker_processes import (
    BUILTIN_ENGINE,
    WorkerProcess,
    create_topics,
    read_log,
    wait_until,
)

pytestmark = pytest.mark.kafka

TOKEN = f"analytics-test-{uuid.uuid4().hex}"


@dataclass
class Analytics:
    config: Config
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str) -> Any:
        request = urllib.request.Request(
            self.url + path, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def status(self, path: str, headers: dict[str, str] | None = None) -> int:
        """The HTTP status of GET `path`, with `headers` only."""
        request = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])


@dataclass
class Driven:
    active: set[int]
    completed: set[int]
    terminated: set[int]
    resolved_incident: int


@pytest.fixture(scope="module")
def analytics(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Analytics]:
    home = tmp_path_factory.mktemp("analytics")
    config = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"a{uuid.uuid4().hex[:8]}", home=home
    )
    create_topics(config)
    worker = WorkerProcess(config, home, engine=BUILTIN_ENGINE).start()
    port = free_port()
    log = home / "analytics.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "partita.cli",
                "analytics",
                "--bootstrap-servers",
                kafka_bootstrap,
                "--namespace",
                config.namespace,
                "--port",
                str(port),
                "--data-dir",
                str(home / "tables"),
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PARTITA_ANALYTICS_TOKEN": TOKEN},
        )
    running = Analytics(config, f"http://127.0.0.1:{port}", process, log)
    try:
        yield running
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        worker.stop()


def _create(client: Client, process_id: str, n: int) -> int:
    key: int = client.create_instance(process_id, {"n": n}).value.process_instance_key
    return key


@pytest.fixture(scope="module")
def driven(analytics: Analytics) -> Driven:
    """5 instances completed by a job worker, 1 cancelled, 1 whose job failed with no retries
    (incident, then retries updated and the incident resolved), 1 waiting for its job and one
    stuck in an input-mapping incident."""
    config = analytics.config
    with Client(config, timeout=60) as client:
        client.deploy(BPMN_FIXTURES / "one-task.bpmn", BPMN_FIXTURES / "bad-mapping.bpmn")
        completed = {_create(client, "one-task", n) for n in range(5)}
        worker = JobWorker(config, name="analytics-test", mode="poll", client=client)

        @worker.task("work", retry_backoff_ms=0)
        def work(n: int, job: ActivatedJob) -> dict[str, object]:
            return {"doubled": 2 * n}

        stats = worker.run(duration=30, max_jobs=5)
        assert stats.completed == 5, stats

        waiting = [_create(client, "one-task", n) for n in range(5, 8)]
        jobs = client.activate_jobs("work", worker="analytics-test", max_jobs=3)
        assert len(jobs) == 3
        by_instance = {job.process_instance_key: key for key, job in jobs}
        failed_job = by_instance[waiting[0]]
        client.fail_job(failed_job, 0, "no stock left")
        client.cancel_instance(waiting[1])
        stuck = _create(client, "bad-mapping", 0)

        incident = next(
            r.key
            for records in read_log(config).partitions.values()
            for r in records
            if r.intent is IncidentIntent.CREATED and r.value.job_key == failed_job
        )
        client.update_job_retries(failed_job, 1)
        client.resolve_incident(incident)
    return Driven(
        active={waiting[0], waiting[2], stuck},
        completed=completed,
        terminated={waiting[1]},
        resolved_incident=incident,
    )


# -- tests ------------------------------------------------------------------------------------


def test_figures_equal_the_log(analytics: Analytics, driven: Driven) -> None:
    events = log_events(analytics.config)
    processes = expected_processes(events)
    assert {p["bpmnProcessId"]: p["active"] for p in processes} == {
        "one-task": 2,
        "bad-mapping": 1,
    }

    def settled() -> bool:
        try:
            return bool(analytics.get("/api/processes") == processes)
        except OSError:
            return False

    wait_until(settled, 40, "the analytics to count what the log holds", analytics.tail)

    summary = analytics.get("/api/summary")
    assert summary["instances"] == {
        "started": 9,
        "completed": 5,
        "terminated": 1,
        "active": 3,
    }

    open_incidents = expected_open_incidents(events)
    assert driven.resolved_incident not in open_incidents and len(open_incidents) == 1
    served = analytics.get("/api/incidents")
    assert [int(i["incidentKey"]) for i in served] == list(open_incidents)
    (incident,) = open_incidents.values()
    assert served[0]["errorType"] == incident.value.error_type.value == "IO_MAPPING_ERROR"
    assert served[0]["errorMessage"] == incident.value.error_message
    assert served[0]["elementId"] == "work"
    assert int(served[0]["processInstanceKey"]) == incident.value.process_instance_key
    assert summary["openIncidents"] == 1

    (jobs,) = analytics.get("/api/jobs")
    job_events = Counter(r.intent for r in events if isinstance(r.intent, JobIntent))
    assert jobs["type"] == "work"
    assert jobs["created"] == job_events[JobIntent.CREATED] == 8
    assert jobs["completed"] == job_events[JobIntent.COMPLETED] == 5
    assert jobs["failed"] == job_events[JobIntent.FAILED] == 1
    assert jobs["canceled"] == job_events[JobIntent.CANCELED] == 1
    assert sum(m["completed"] for m in jobs["perMinute"]) == 5
    latencies = expected_job_latencies(events)["work"]
    assert jobs["latency"]["count"] == len(latencies)
    for q in (50, 95, 99):
        assert close_to(jobs["latency"][f"p{q}"], nearest_rank(latencies, q)), (q, jobs, latencies)
    assert jobs["latency"]["max"] == max(latencies)

    durations = expected_durations(events)
    served_elements = {
        (e["bpmnProcessId"], e["elementId"]): e for e in analytics.get("/api/elements")
    }
    assert set(served_elements) == set(durations)
    for key, values in durations.items():
        element = served_elements[key]
        assert element["count"] == len(values), key
        for q in (50, 95, 99):
            assert close_to(element[f"p{q}"], nearest_rank(values, q)), (key, q, element, values)
    assert served_elements[("one-task", "work")]["bpmnElementType"] == "SERVICE_TASK"
    assert served_elements[("one-task", "one-task")]["count"] == 5

    instances = analytics.get("/api/instances?limit=50")
    states = {int(i["processInstanceKey"]): i["state"] for i in instances}
    assert states == {
        **{key: "active" for key in driven.active},
        **{key: "completed" for key in driven.completed},
        **{key: "terminated" for key in driven.terminated},
    }
    stuck = next(i for i in instances if i["bpmnProcessId"] == "bad-mapping")
    assert stuck["incidents"] == 1

    timeline = analytics.get("/api/timeline")
    assert sum(b["started"] for b in timeline) == 9
    assert sum(b["completed"] for b in timeline) == 5


def test_cli_prints_instances_and_incidents(
    analytics: Analytics, driven: Driven, capsys: pytest.CaptureFixture[str]
) -> None:
    wait_until(
        lambda: len(analytics.get("/api/instances?state=active")) == 3,
        40,
        "three active instances",
        analytics.tail,
    )
    assert main(["instances", "--url", analytics.url, "--state", "active"]) == 1
    assert "require a token: set PARTITA_ANALYTICS_TOKEN" in capsys.readouterr().err
    flags = ["--url", analytics.url, "--token", TOKEN]
    assert main(["instances", *flags, "--state", "active"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["KEY", "PROCESS", "VERSION", "STATE"]
    for key in driven.active:
        assert str(key) in out
    for key in driven.completed | driven.terminated:
        assert str(key) not in out
    assert "3 instances shown (3 active, 0 ended)" in out

    assert main(["instances", *flags, "--process", "one-task", "--limit", "50"]) == 0
    out = capsys.readouterr().out
    assert out.count("completed") == 5 and out.count("terminated") == 1

    for argv in (
        ["incidents", *flags],
        ["incidents", "list", *flags],
    ):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "IO_MAPPING_ERROR" in out and "bad-mapping" in out
        assert str(driven.resolved_incident) not in out
        assert "1 open incident;" in out

    assert main(["incidents", "--url", "http://127.0.0.1:1"]) == 1
    assert "cannot reach the analytics" in capsys.readouterr().err


def test_every_page_and_endpoint_needs_the_token(analytics: Analytics) -> None:
    wrong = {"Authorization": f"Bearer {TOKEN}-not"}
    right = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/", "/api/summary", "/api/instances?limit=5", "/no-such-page"):
        assert analytics.status(path) == 401, path
        assert analytics.status(path, wrong) == 401, path
    assert analytics.status("/api/summary", right) == 200
    assert analytics.status(f"/api/summary?token={TOKEN}") == 200
    assert analytics.status("/api/summary?token=guess") == 401


def test_page_and_consumer_group(analytics: Analytics, driven: Driven) -> None:
    with urllib.request.urlopen(f"{analytics.url}/?token={TOKEN}", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/html")
        page = response.read().decode()
    assert "<svg" in page or "createElementNS" in page
    assert "/api/summary" in page and "setInterval(refresh" in page
    assert "Bearer ${token}" in page  # the page sends its ?token= on to the endpoints
    assert "Set-Cookie" not in response.headers
    assert "<script src" not in page and "<link" not in page  # self-contained

    config = analytics.config
    consumer = Consumer(
        {"bootstrap.servers": config.bootstrap, "group.id": f"{config.namespace}.analytics"}
    )
    try:
        partitions = [TopicPartition(config.log_topic, p) for p in range(config.partitions)]

        def committed() -> bool:
            offsets = consumer.committed(partitions, timeout=10)
            return all(tp.offset > 0 for tp in offsets)

        wait_until(committed, 30, "offsets committed by group <ns>.analytics", analytics.tail)
    finally:
        consumer.close()


def test_user_tasks_are_listed_claimed_and_completed_from_the_command_line(
    analytics: Analytics, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last: its instances come after the figures the tests above compare."""
    config = analytics.config
    with Client(config, timeout=60) as client:
        client.deploy(CONFORMANCE / "bpmn" / "user-task.bpmn")
        base = {"reviewers": ["cy"], "due": None, "urgent": False}
        assigned = _create_with(client, "user-task", {**base, "owner": "ann"})
        open_one = _create_with(client, "user-task", {**base, "owner": None, "urgent": True})
    two = "two open user tasks"
    wait_until(lambda: len(analytics.get("/api/user-tasks")) == 2, 40, two, analytics.tail)
    flags = ["--url", analytics.url, "--token", TOKEN]
    assert main(["tasks", *flags, "--unassigned", "--candidate-group", "audit"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["TASK", "PROCESS", "ELEMENT", "ASSIGNEE"]
    (row,) = [line for line in out.splitlines()[1:] if "user-task" in line]
    task_key = int(row.split()[0])
    assert "claims,audit" in row and " 90 " in row  # urgent: priority 90

    cluster = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]
    assert main(["tasks", "claim", str(task_key), "bob", *cluster]) == 0
    assert f"user task {task_key} claimed by bob" in capsys.readouterr().out
    assert main(["tasks", "claim", str(task_key), "dee", *cluster]) == 1
    assert "it has already been assigned" in capsys.readouterr().err
    vars_ = '{"approved": true}'
    assert main(["tasks", "complete", str(task_key), "--vars", vars_, *cluster]) == 0
    wait_until(
        lambda: [t["assignee"] for t in analytics.get("/api/user-tasks")] == ["ann"],
        40,
        "only ann's task open",
        analytics.tail,
    )
    ended = {
        r.key
        for r in log_events(config)
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.bpmn_element_type is BpmnElementType.PROCESS
    }
    assert open_one in ended and assigned not in ended


def _create_with(client: Client, process_id: str, variables: dict[str, object]) -> int:
    key: int = client.create_instance(process_id, variables).value.process_instance_key
    return key
