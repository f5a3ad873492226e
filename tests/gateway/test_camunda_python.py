"""camunda-orchestration-sdk 10.0.1 (PyPI, unchanged) against `partita gateway`'s REST API on the
real broker. The SDK is installed into a venv of its own under the checkout's `.partita/` (kept
between runs) and runs the programs of `tests/interop/camunda_python/`: `journey.py` (deploy,
await completion, messages, decisions), `user_tasks.py` (assign, claim, unassign, update and
complete a user task), `task_listeners.py` (a task listener worker correcting and denying
beside a task list application) and `ad_hoc_agent.py` (an agent driving a job worker ad-hoc
subprocess).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from partita.client import Client
from partita.config import Config
from partita.protocol.intents import JobIntent, ProcessInstanceIntent, UserTaskIntent
from partita.protocol.records import Record
from tests.support.gateway import RunningGateway, process_ended, records
from tests.support.paths import BPMN_FIXTURES, CONFORMANCE, ROOT
from tests.support.worker_processes import wait_until

pytestmark = pytest.mark.kafka

BPMN = BPMN_FIXTURES / "gateway"
SDK = "camunda-orchestration-sdk==10.0.1"
SDK_VENV = ROOT / ".partita" / "interop" / "camunda-orchestration-sdk-10.0.1"
JOURNEY = ROOT / "tests" / "interop" / "camunda_python" / "journey.py"
USER_TASKS = JOURNEY.with_name("user_tasks.py")
TASK_LISTENERS = JOURNEY.with_name("task_listeners.py")
AD_HOC_AGENT = JOURNEY.with_name("ad_hoc_agent.py")


@pytest.fixture(scope="session")
def sdk_python() -> Path:
    """The SDK's venv under `.partita/`, made (pip from PyPI) once and kept. It is built beside
    its place and renamed into it, so a run that stops half-way leaves nothing half-made."""
    python = SDK_VENV / "bin" / "python"
    if python.exists():
        return python
    building = SDK_VENV.with_name(f"{SDK_VENV.name}.{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(building)], check=True, timeout=120)
        pip = [str(building / "bin" / "python"), "-m", "pip", "install", "--quiet", SDK]
        done = subprocess.run(pip, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"pip install {SDK} failed:\n{done.stdout}{done.stderr}"
        with contextlib.suppress(OSError):  # another run placed it first
            building.rename(SDK_VENV)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return python


def test_camunda_python_sdk_journey(
    engine: Config, gateway: RunningGateway, sdk_python: Path
) -> None:
    env = {
        **os.environ,
        "CAMUNDA_REST_ADDRESS": gateway.rest,
        "CAMUNDA_AUTH_STRATEGY": "NONE",
    }
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(sdk_python), str(JOURNEY), str(BPMN)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=JOURNEY.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr + gateway.log.read_text()
    steps = {s["step"]: s for s in map(json.loads, done.stdout.splitlines())}
    assert steps["topology"] == {
        "step": "topology",
        "brokers": 1,
        "partitions": engine.partitions,
        "version": "8.8.0",
    }
    assert steps["deploy"]["processes"] == ["gw-double", "gw-wait"]
    assert steps["await-completion"]["variables"] == {"amount": 42, "by": "sdk-worker"}
    assert steps["buffered-message"]["variables"] == {"orderId": "o-8", "paidBy": "card"}
    correlate = steps["correlate"]
    assert correlate["correlated"] == correlate["instance"]
    assert steps["correlate-nobody"] == {
        "step": "correlate-nobody",
        "error": "NotFoundError",
        "status": 404,
    }
    assert steps["unknown-process"]["status"] == 404
    assert steps["decision"] == {
        "step": "decision",
        "decisions": ["discount", "dish", "drinks", "points", "season"],
        "output": '{"level":"silver","rate":0.05}',
        "version": 1,
        "failure": None,
    }
    instance = int(steps["await-completion"]["key"])
    worked = [
        r
        for r in records(engine)
        if r.intent is JobIntent.COMPLETED and r.value.process_instance_key == instance  # type: ignore[union-attr]
    ]
    assert [r.value.worker for r in worked] == ["sdk-worker"]  # type: ignore[union-attr]


def test_camunda_python_sdk_works_a_user_task(
    engine: Config, gateway: RunningGateway, sdk_python: Path
) -> None:
    with Client(engine, timeout=60) as client:
        client.deploy(CONFORMANCE / "bpmn" / "user-task.bpmn")
        variables = {"owner": None, "reviewers": [], "due": None, "urgent": False}
        instance = client.create_instance("user-task", variables).value.process_instance_key

    def created() -> list[Record]:
        return [
            r
            for r in records(engine)
            if r.intent is UserTaskIntent.CREATED and r.value.process_instance_key == instance  # type: ignore[union-attr]
        ]

    wait_until(lambda: bool(created()), 30, "the user task created")
    key = created()[0].key
    env = {**os.environ, "CAMUNDA_REST_ADDRESS": gateway.rest, "CAMUNDA_AUTH_STRATEGY": "NONE"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(sdk_python), str(USER_TASKS), str(key)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=USER_TASKS.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr + gateway.log.read_text()
    steps = {s.pop("step"): s for s in map(json.loads, done.stdout.splitlines())}
    assert steps == {
        "assign": {"error": None},
        "claim-taken": {"error": "ConflictError", "status": 409},
        "unassign": {"error": None},
        "claim": {"error": None},
        "update": {"error": None},
        "complete": {"error": None},
        "complete-again": {"error": "NotFoundError", "status": 404},
    }
    events = [r for r in records(engine) if r.key == key and r.value_type.name == "USER_TASK"]
    assigned = [
        (r.value.assignee, r.value.action)  # type: ignore[union-attr]
        for r in events
        if r.intent is UserTaskIntent.ASSIGNED
    ]
    assert assigned == [("ann", "assign"), ("", "unassign"), ("bob", "claim")]
    (updated,) = [r.value for r in events if r.intent is UserTaskIntent.UPDATED]
    assert updated.candidate_groups_list == ("audit",)  # type: ignore[union-attr]
    assert updated.priority == 80  # type: ignore[union-attr]
    assert updated.due_date.startswith("2027-01-15T12:00:00")  # type: ignore[union-attr]
    (completed,) = [r.value for r in events if r.intent is UserTaskIntent.COMPLETED]
    assert json.loads(completed.variables) == {"approved": True}  # type: ignore[union-attr]
    wait_until(
        lambda: process_ended(engine, instance, ProcessInstanceIntent.ELEMENT_COMPLETED),
        30,
        "the instance completed",
    )


def _run(sdk_python: Path, gateway: RunningGateway, program: Path, *arguments: str) -> list[dict]:
    env = {**os.environ, "CAMUNDA_REST_ADDRESS": gateway.rest, "CAMUNDA_AUTH_STRATEGY": "NONE"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(sdk_python), str(program), *arguments],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
        cwd=program.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr + gateway.log.read_text()
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_camunda_python_sdk_completes_task_listeners(
    engine: Config, gateway: RunningGateway, sdk_python: Path
) -> None:
    with Client(engine, timeout=60) as client:
        client.deploy(CONFORMANCE / "bpmn" / "task-listeners.bpmn")
        variables = {"owner": "ann", "stage": "final"}
        instance = client.create_instance("task-listeners", variables).value.process_instance_key

    def creating() -> list[Record]:
        return [
            r
            for r in records(engine)
            if r.intent is UserTaskIntent.CREATING and r.value.process_instance_key == instance  # type: ignore[union-attr]
        ]

    wait_until(lambda: bool(creating()), 30, "the user task creating")
    key = creating()[0].key
    steps = {s.pop("step"): s for s in _run(sdk_python, gateway, TASK_LISTENERS, str(key))}
    assert steps == {
        "creating": {"kind": "TASK_LISTENER", "event": "CREATING"},
        "assigning": {"assignee": "ann"},
        "denied": {"answer": "ConflictError 409"},
        "completed": {"answer": "completed"},
    }
    events = [r for r in records(engine) if r.key == key and r.value_type.name == "USER_TASK"]
    assigned = [r.value.assignee for r in events if r.intent is UserTaskIntent.ASSIGNED]  # type: ignore[union-attr]
    assert assigned == ["bob"]  # the assigning listener's correction
    denied = [r.value.denied_reason for r in events if r.intent is UserTaskIntent.COMPLETION_DENIED]  # type: ignore[union-attr]
    assert denied == ["needs a second look"]
    wait_until(
        lambda: process_ended(engine, instance, ProcessInstanceIntent.ELEMENT_COMPLETED),
        30,
        "the instance completed",
    )


def test_camunda_python_sdk_cancels_through_canceling_task_listeners(
    engine: Config, gateway: RunningGateway, sdk_python: Path
) -> None:
    with Client(engine, timeout=60) as client:
        client.deploy(CONFORMANCE / "bpmn" / "task-listeners.bpmn")
        instance = client.create_instance("task-listeners-cancel").value.process_instance_key

    def created() -> list[Record]:
        return [
            r
            for r in records(engine)
            if r.intent is UserTaskIntent.CREATED and r.value.process_instance_key == instance  # type: ignore[union-attr]
        ]

    wait_until(lambda: bool(created()), 30, "the user task created")
    task = str(created()[0].key)
    steps = _run(sdk_python, gateway, TASK_LISTENERS, "cancel", str(instance))
    assert steps == [
        {"step": "cancelled"},
        {"step": "tl-cancel-a", "event": "CANCELING", "task": task},
        {"step": "tl-cancel-b", "event": "CANCELING", "task": task},
    ]
    wait_until(
        lambda: process_ended(engine, instance, ProcessInstanceIntent.ELEMENT_TERMINATED),
        30,
        "the instance terminated",
    )
    events = [r for r in records(engine) if r.value_type.name == "USER_TASK" and r.key == int(task)]
    assert [r.intent for r in events][-2:] == [UserTaskIntent.CANCELING, UserTaskIntent.CANCELED]


def test_camunda_python_sdk_drives_a_job_worker_ad_hoc_subprocess(
    engine: Config, gateway: RunningGateway, sdk_python: Path
) -> None:
    with Client(engine, timeout=60) as client:
        client.deploy(CONFORMANCE / "bpmn" / "ad-hoc-agent.bpmn")
        instance = client.create_instance("ad-hoc-agent", {}).value.process_instance_key
    steps = {s.pop("step"): s for s in _run(sdk_python, gateway, AD_HOC_AGENT)}
    assert steps == {
        "agent": {"kind": "AD_HOC_SUB_PROCESS", "tools": ["lookup", "refund"]},
        "tool": {"toolName": "lookup"},  # the activation's variables reach the tool
        "agent-again": {"results": [{"tool": "lookup", "answer": "shipped"}]},
        "done": {},
    }
    wait_until(
        lambda: process_ended(engine, instance, ProcessInstanceIntent.ELEMENT_COMPLETED),
        30,
        "the instance completed",
        lambda: "\n".join(
            f"{r.record_type.name} {r.value_type.name} {r.intent.name} {r.rejection_reason}"
            f" {getattr(r.value, 'element_id', '')} {getattr(r.value, 'type', '')}"
            for r in records(engine)
            if getattr(r.value, "process_instance_key", None) == instance
            or r.value_type.name == "JOB"
        ),
    )
