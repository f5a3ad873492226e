"""The BPMN conformance corpus: each case in `tests/conformance/cases/` names BPMN files of
`tests/conformance/bpmn/`, steps that drive one process instance, and the expected outcome.
`run_case` plays a case on an engine harness (the in-memory log or the real broker) and checks
the outcome; `features` names what a model uses, for the coverage matrix
(`tests/conformance/coverage.py`).

Case format (YAML):

    bpmn: [file.bpmn, ...]        # deployed first
    process: process-id           # the instance the steps drive
    steps:                        # in order
      - create: {variables}
      - complete: {type: T, variables: {...}, result: {...}}  # the oldest open job of type T
      - fail: {type: T, retries: N}
      - throw: {type: T, code: C}
      - publish: {name: N, key: K, variables: {...}, ttl: ms}
      - advance: seconds
      - signal: {name: N, variables: {...}}      # SIGNAL BROADCAST
      - cancel: true
      - assign_task: {assignee: A}               # the oldest open user task (USER_TASK ASSIGN)
      - complete_task: {variables: {...}}        # the oldest open user task (COMPLETE)
      - find: true                # the instance a message or timer started
    expect:
      completed: true | false     # the root instance completed
      passed: [element ids that completed at least once]
      not_passed: [element ids that never completed]
      terminated: [element ids that were terminated]
      variables: {name: value}    # last value set on the root instance scope
      incidents: [error types]
      open_jobs: [job types still open]
      open_user_tasks: [element ids of user tasks still open]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from partita.bpmn import (
    AdHocSubProcess,
    CallActivity,
    EventBasedGateway,
    EventNode,
    FlowNode,
    Process,
    SubProcess,
    UserTask,
)
from partita.bpmn.cron import looks_like_cron
from partita.protocol.enums import BpmnElementType, BpmnEventType
from partita.protocol.intents import (
    DeploymentIntent,
    IncidentIntent,
    JobIntent,
    ProcessInstanceIntent,
    SignalIntent,
    UserTaskIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    JobValue,
    ProcessInstanceValue,
    SignalValue,
    UserTaskValue,
)
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, create, publish, send

CASES = CONFORMANCE / "cases"
BPMN = CONFORMANCE / "bpmn"


@dataclass(frozen=True)
class Case:
    name: str
    spec: dict[str, Any]

    @property
    def files(self) -> list[str]:
        return list(self.spec["bpmn"])


def cases() -> list[Case]:
    return [Case(p.stem, yaml.safe_load(p.read_text())) for p in sorted(CASES.glob("*.yaml"))]


def _tree(engine: Any, root: int) -> set[int]:
    """The root instance and every instance its call activities started, transitively."""
    keys = {root}
    while True:
        more = {
            r.key
            for r in all_events(engine)
            if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATING
            and r.value.bpmn_element_type is BpmnElementType.PROCESS
            and r.value.parent_process_instance_key in keys
        }
        if more <= keys:
            return keys
        keys |= more


def _open_jobs(engine: Any, root: int) -> list[Record]:
    tree = _tree(engine, root)
    events = all_events(engine)
    done = {r.key for r in events if r.intent in (JobIntent.COMPLETED, JobIntent.CANCELED)}
    return [
        r
        for r in events
        if r.intent is JobIntent.CREATED
        and r.value.process_instance_key in tree
        and r.key not in done
    ]


def _open_user_tasks(engine: Any, root: int) -> list[Record]:
    tree = _tree(engine, root)
    events = all_events(engine)
    done = {
        r.key for r in events if r.intent in (UserTaskIntent.COMPLETED, UserTaskIntent.CANCELED)
    }
    return [
        r
        for r in events
        if r.intent is UserTaskIntent.CREATED
        and r.value.process_instance_key in tree
        and r.key not in done
    ]


def _accepted(results: list[Record]) -> None:
    assert results and results[0].rejection_type is None, results[0].rejection_reason


def _job(engine: Any, root: int, job_type: str) -> Record:
    open_jobs = _open_jobs(engine, root)
    found = [j for j in open_jobs if j.value.type == job_type]
    assert found, f"no open job of type {job_type!r}; open: {[j.value.type for j in open_jobs]}"
    return found[0]


def run_case(engine: Any, case: Case) -> None:
    resources = tuple(DeploymentResource(n, (BPMN / n).read_bytes()) for n in case.files)
    results = send(engine, command(DeploymentIntent.CREATE, DeploymentValue(resources=resources)))
    assert any(r.intent is DeploymentIntent.CREATED for r in results), results[0].rejection_reason
    root = -1
    for step in case.spec.get("steps", []):
        ((kind, arg),) = step.items()
        if kind == "create":
            root = create(engine, case.spec["process"], **(arg or {}))
        elif kind == "complete":
            job = _job(engine, root, arg["type"])
            value = JobValue(
                variables=json.dumps(arg.get("variables") or {}),
                result=json.dumps(arg["result"]) if "result" in arg else "",
            )
            _accepted(send(engine, command(JobIntent.COMPLETE, value, key=job.key)))
        elif kind == "fail":
            job = _job(engine, root, arg["type"])
            send(engine, command(JobIntent.FAIL, JobValue(retries=arg["retries"]), key=job.key))
        elif kind == "throw":
            job = _job(engine, root, arg["type"])
            value = JobValue(error_code=arg["code"], error_message=arg.get("message", ""))
            send(engine, command(JobIntent.THROW_ERROR, value, key=job.key))
        elif kind == "publish":
            publish(
                engine,
                arg["name"],
                str(arg["key"]),
                ttl=arg.get("ttl", 60_000),
                **(arg.get("variables") or {}),
            )
        elif kind == "signal":
            value = SignalValue(
                signal_name=arg["name"], variables=json.dumps(arg.get("variables") or {})
            )
            _accepted(send(engine, command(SignalIntent.BROADCAST, value)))
        elif kind == "advance":
            engine.advance(float(arg))
        elif kind == "find":  # an instance a message or timer started
            root = next(
                r.key
                for r in all_events(engine)
                if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATING
                and r.value.bpmn_element_type is BpmnElementType.PROCESS
                and r.value.bpmn_process_id == case.spec["process"]
            )
        elif kind == "assign_task":
            task = _open_user_tasks(engine, root)[0]
            value = UserTaskValue(assignee=arg["assignee"])
            _accepted(send(engine, command(UserTaskIntent.ASSIGN, value, key=task.key)))
        elif kind == "complete_task":
            task = _open_user_tasks(engine, root)[0]
            variables = json.dumps(arg.get("variables") or {})
            value = UserTaskValue(variables=variables)
            _accepted(send(engine, command(UserTaskIntent.COMPLETE, value, key=task.key)))
        elif kind == "cancel":
            cancel = ProcessInstanceValue(process_instance_key=root)
            send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=root))
        else:
            raise AssertionError(f"{case.name}: unknown step {kind!r}")
    _check(engine, case, root)


def _check(engine: Any, case: Case, root: int) -> None:
    expect = case.spec.get("expect", {})
    tree = _tree(engine, root)
    events = all_events(engine)
    mine = [
        r
        for r in events
        if r.value_type.name == "PROCESS_INSTANCE" and r.value.process_instance_key in tree
    ]
    completed = {
        r.value.element_id for r in mine if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
    }
    terminated = {
        r.value.element_id for r in mine if r.intent is ProcessInstanceIntent.ELEMENT_TERMINATED
    }
    root_done = any(
        r.key == root and r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED for r in mine
    )
    where = f"case {case.name}"
    if "completed" in expect:
        assert root_done is expect["completed"], f"{where}: completed is {root_done}"
    for element in expect.get("passed", []):
        assert element in completed, f"{where}: {element} never completed"
    for element in expect.get("not_passed", []):
        assert element not in completed, f"{where}: {element} completed"
    for element in expect.get("terminated", []):
        assert element in terminated, f"{where}: {element} was not terminated"
    last: dict[str, Any] = {}
    for r in events:
        if r.value_type.name == "VARIABLE" and r.value.scope_key == root:
            last[r.value.name] = json.loads(r.value.value)
    for name, value in (expect.get("variables") or {}).items():
        assert last.get(name) == value, f"{where}: variable {name} is {last.get(name)!r}"
    incidents = sorted(
        r.value.error_type.name
        for r in events
        if r.intent is IncidentIntent.CREATED and r.value.process_instance_key in tree
    )
    assert incidents == sorted(expect.get("incidents", [])), f"{where}: incidents {incidents}"
    if "open_user_tasks" in expect:
        open_tasks = sorted(t.value.element_id for t in _open_user_tasks(engine, root))
        assert open_tasks == sorted(expect["open_user_tasks"]), f"{where}: tasks {open_tasks}"
    if "open_jobs" in expect:
        open_types = sorted(j.value.type for j in _open_jobs(engine, root))
        assert open_types == sorted(expect["open_jobs"]), f"{where}: open jobs {open_types}"


# -- coverage ---------------------------------------------------------------------------------


def features(model: Process) -> set[str]:
    """Names of what a model uses, as the coverage matrix lists them."""
    found = set()
    for element in model.elements.values():
        found |= element_features(model, element)
    if model.start_listeners or model.end_listeners:
        found.add("execution listeners")
    return found


_EVENT_NAMES = {
    BpmnEventType.MESSAGE: "message",
    BpmnEventType.TIMER: "timer",
    BpmnEventType.ERROR: "error",
    BpmnEventType.TERMINATE: "terminate",
    BpmnEventType.NONE: "none",
    BpmnEventType.LINK: "link",
    BpmnEventType.ESCALATION: "escalation",
    BpmnEventType.SIGNAL: "signal",
    BpmnEventType.COMPENSATION: "compensation",
}


def element_features(model: Process, element: FlowNode) -> set[str]:
    kind = element.element_type
    event = _EVENT_NAMES.get(element.event_type, "")
    names: set[str] = set()
    if kind is BpmnElementType.START_EVENT:
        parent = model.elements.get(element.scope)
        where = (
            "event subprocess start event"
            if isinstance(parent, SubProcess) and parent.triggered_by_event
            else "start event"
        )
        suffix = ""
        if (
            isinstance(element, EventNode)
            and where.startswith("event")
            and not element.interrupting
        ):
            suffix = " (non-interrupting)"
        names.add(f"{event} {where}{suffix}")
    elif kind is BpmnElementType.END_EVENT:
        names.add(f"{event} end event")
    elif kind is BpmnElementType.INTERMEDIATE_CATCH_EVENT:
        names.add(f"{event} intermediate catch event")
    elif kind is BpmnElementType.INTERMEDIATE_THROW_EVENT:
        names.add(f"{event} intermediate throw event")
    elif kind is BpmnElementType.BOUNDARY_EVENT:
        assert isinstance(element, EventNode)
        mode = "interrupting" if element.interrupting else "non-interrupting"
        names.add(f"{event} boundary event ({mode})")
    elif isinstance(element, SubProcess):
        names.add("event subprocess" if element.triggered_by_event else "embedded subprocess")
    elif isinstance(element, CallActivity):
        names.add("call activity")
    elif isinstance(element, AdHocSubProcess):
        names.add("ad-hoc subprocess (job worker)" if element.job_type else "ad-hoc subprocess")
    elif isinstance(element, EventBasedGateway):
        names.add("event-based gateway")
    else:
        names.add(kind.name.lower().replace("_", " "))
    if element.inputs or element.outputs:
        names.add("input/output mappings")
    if element.multi_instance is not None:
        mode = "sequential" if element.multi_instance.sequential else "parallel"
        names.add(f"multi-instance ({mode})")
    if element.start_listeners or element.end_listeners:
        names.add("execution listeners")
    if isinstance(element, UserTask) and element.task_listeners:
        names.add("task listeners")
    if isinstance(element, UserTask) and element.listeners_of("canceling"):
        names.add("canceling task listeners")
    timer = element.timer if isinstance(element, EventNode) else None
    if timer is not None and timer.kind == "cycle" and looks_like_cron(timer.expression):
        names.add("timer cycle as a cron expression")
    return names
