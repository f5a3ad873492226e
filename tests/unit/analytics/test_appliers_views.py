"""Appliers and views on dict-backed tables: events of several partitions folded and merged into
the served figures; redeliveries ignored; windows bounded."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from partita.analytics import views
from partita.analytics.appliers import (
    RECENT_PER_PARTITION,
    TIMELINE_BUCKET_MS,
    TIMELINE_BUCKETS,
    Tables,
    apply,
    wanted,
)
from partita.protocol.enums import BpmnElementType, ErrorType, RecordType
from partita.protocol.headers import INTENT, RECORD_TYPE, VALUE_TYPE, header, record_headers
from partita.protocol.intents import (
    IncidentIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    UserTaskIntent,
)
from partita.protocol.records import Record, command, event
from partita.protocol.values import (
    IncidentValue,
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    UserTaskValue,
)

T0 = 1_800_000_000_000


class Feed:
    """Folds events into fresh tables, numbering positions per partition."""

    def __init__(self) -> None:
        self.tables = Tables.in_memory()
        self.positions: dict[int, int] = {}

    def __call__(self, partition: int, record: Record) -> bool:
        position = self.positions.get(partition, 0)
        self.positions[partition] = position + 1
        return apply(self.tables, partition, record.with_position(position))


def element(
    intent: ProcessInstanceIntent,
    key: int,
    at: int,
    *,
    instance: int,
    element_id: str = "order",
    kind: BpmnElementType = BpmnElementType.PROCESS,
    process: str = "order",
) -> Record:
    value = ProcessInstanceValue(
        bpmn_process_id=process,
        version=1,
        process_instance_key=instance,
        element_id=element_id,
        bpmn_element_type=kind,
    )
    return event(intent, value, key, timestamp=at)


def job(intent: JobIntent, key: int, at: int, instance: int, job_type: str = "pay") -> Record:
    value = JobValue(type=job_type, process_instance_key=instance, bpmn_process_id="order")
    return event(intent, value, key, timestamp=at)


def run_instance(feed: Feed, partition: int, instance: int, start: int, task_ms: int) -> None:
    activated = ProcessInstanceIntent.ELEMENT_ACTIVATED
    completed = ProcessInstanceIntent.ELEMENT_COMPLETED

    def task(intent: ProcessInstanceIntent, at: int) -> Record:
        kind = BpmnElementType.SERVICE_TASK
        return element(intent, instance + 1, at, instance=instance, element_id="pay", kind=kind)

    feed(partition, element(activated, instance, start, instance=instance))
    feed(partition, task(activated, start + 1))
    feed(partition, job(JobIntent.CREATED, instance + 2, start + 2, instance))
    feed(partition, job(JobIntent.COMPLETED, instance + 2, start + 2 + task_ms, instance))
    feed(partition, task(completed, start + 3 + task_ms))
    feed(partition, element(completed, instance, start + 4 + task_ms, instance=instance))


def test_instances_elements_and_jobs_of_several_partitions_merge() -> None:
    feed = Feed()
    run_instance(feed, 0, 100, T0, task_ms=40)
    run_instance(feed, 1, 200, T0 + 5, task_ms=400)
    feed(2, element(ProcessInstanceIntent.ELEMENT_ACTIVATED, 300, T0 + 9, instance=300))
    feed(2, job(JobIntent.CREATED, 302, T0 + 9, 300))
    tables = feed.tables

    assert views.processes(tables) == [
        {
            "bpmnProcessId": "order",
            "version": 1,
            "started": 3,
            "completed": 2,
            "terminated": 0,
            "active": 1,
        }
    ]
    pay = next(e for e in views.elements(tables) if e["elementId"] == "pay")
    assert pay["count"] == 2 and pay["bpmnElementType"] == "SERVICE_TASK"
    assert pay["min"] == 42 and pay["max"] == 402
    (jobs,) = views.jobs(tables, now_ms=T0 + 1000)
    assert (jobs["created"], jobs["completed"], jobs["open"]) == (3, 2, 1)
    assert (jobs["latency"]["min"], jobs["latency"]["max"]) == (40, 400)
    assert jobs["completedLastMinute"] == 2 and sum(m["completed"] for m in jobs["perMinute"]) == 2

    listed = views.instances(tables, now_ms=T0 + 1000)
    assert [(i["processInstanceKey"], i["state"]) for i in listed] == [
        ("300", "active"),
        ("200", "completed"),
        ("100", "completed"),
    ]
    assert listed[0]["durationMs"] == 1000 - 9 and listed[1]["durationMs"] == 404
    assert [i["processInstanceKey"] for i in views.instances(tables, T0, state="active")] == ["300"]

    summary = views.summary(tables, now_ms=T0 + 1000)
    assert summary["instances"] == {"started": 3, "completed": 2, "terminated": 0, "active": 1}
    assert summary["partitions"][2]["position"] == 1
    timeline = views.timeline(tables, now_ms=T0 + 1000)
    assert (
        sum(b["started"] for b in timeline) == 3 and sum(b["jobsCompleted"] for b in timeline) == 2
    )


def test_a_redelivered_event_is_not_counted_twice() -> None:
    tables = Tables.in_memory()
    record = element(ProcessInstanceIntent.ELEMENT_ACTIVATED, 7, T0, instance=7).with_position(5)
    assert apply(tables, 0, record)
    assert not apply(tables, 0, record)
    assert not apply(tables, 0, record.with_position(4))
    assert apply(tables, 1, record)  # the same offset on another partition is another event
    assert [p["started"] for p in views.processes(tables)] == [2]


def test_terminated_instances_incidents_and_resolution() -> None:
    feed = Feed()
    feed(0, element(ProcessInstanceIntent.ELEMENT_ACTIVATED, 10, T0, instance=10))
    feed(0, element(ProcessInstanceIntent.ELEMENT_TERMINATED, 10, T0 + 50, instance=10))
    for key, instance in ((20, 11), (21, 12)):
        value = IncidentValue(
            error_type=ErrorType.JOB_NO_RETRIES,
            error_message="no stock",
            bpmn_process_id="order",
            process_instance_key=instance,
            element_id="pay",
        )
        feed(1, event(IncidentIntent.CREATED, value, key, timestamp=T0 + key))
    feed(1, event(IncidentIntent.RESOLVED, IncidentValue(), 20, timestamp=T0 + 99))

    (process,) = views.processes(feed.tables)
    assert (process["terminated"], process["active"]) == (1, 0)
    assert views.elements(feed.tables) == []  # terminated elements have no duration
    (incident,) = views.incidents(feed.tables)
    assert incident["incidentKey"] == "21" and incident["processInstanceKey"] == "12"
    assert incident["errorType"] == "JOB_NO_RETRIES" and incident["elementId"] == "pay"
    assert views.incidents(feed.tables, process="other") == []


def _task(intent: UserTaskIntent, key: int, at: int, **fields: object) -> Record:
    value = UserTaskValue(user_task_key=key, bpmn_process_id="claims", element_id="review")
    return event(intent, replace(value, **fields), key, timestamp=at)


def test_open_user_tasks_most_urgent_first_with_every_filter() -> None:
    feed = Feed()
    feed(0, _task(UserTaskIntent.CREATED, 1, T0, candidate_groups_list=("sales",)))
    feed(0, _task(UserTaskIntent.CREATED, 2, T0 + 1, due_date="2026-12-20T10:00:00Z"))
    due = "2026-12-20T10:00:00+02:00"
    feed(1, _task(UserTaskIntent.CREATED, 3, T0 + 2, due_date=due))
    feed(1, _task(UserTaskIntent.ASSIGNED, 3, T0 + 3, due_date=due, assignee="ann", priority=70))
    feed(1, _task(UserTaskIntent.CREATED, 4, T0 + 4, candidate_users_list=("bob",)))
    feed(1, _task(UserTaskIntent.COMPLETED, 4, T0 + 5))
    feed(0, _task(UserTaskIntent.CREATED, 5, T0 + 6, priority=90))
    feed(0, _task(UserTaskIntent.CANCELED, 5, T0 + 7))

    keys = [t["userTaskKey"] for t in views.user_tasks(feed.tables)]
    assert keys == ["3", "2", "1"]  # 3 is due first (08:00Z), 1 has no due date
    (ann,) = views.user_tasks(feed.tables, assignee="ann")
    assert ann["created"] == T0 + 2 and ann["priority"] == 70  # created when CREATED came
    unassigned = views.user_tasks(feed.tables, assignee="")
    assert [t["userTaskKey"] for t in unassigned] == ["2", "1"]
    assert [t["userTaskKey"] for t in views.user_tasks(feed.tables, candidate_group="sales")] == [
        "1"
    ]
    assert views.user_tasks(feed.tables, candidate_user="bob") == []  # completed
    due = views.user_tasks(feed.tables, due_before="2026-12-20T09:00:00Z")
    assert [t["userTaskKey"] for t in due] == ["3"]
    assert views.user_tasks(feed.tables, process="other") == []
    with pytest.raises(ValueError, match="needs an offset"):
        views.user_tasks(feed.tables, due_before="2026-12-20T09:00:00")


def test_ended_instances_and_timeline_buckets_stay_bounded() -> None:
    feed = Feed()
    hour = TIMELINE_BUCKETS * TIMELINE_BUCKET_MS
    for n in range(RECENT_PER_PARTITION + 50):
        at = T0 + n * (2 * hour // RECENT_PER_PARTITION)
        feed(0, element(ProcessInstanceIntent.ELEMENT_ACTIVATED, n, at, instance=n))
        feed(0, element(ProcessInstanceIntent.ELEMENT_COMPLETED, n, at + 1, instance=n))
    tables = feed.tables
    assert len(tables.instances) == RECENT_PER_PARTITION + 1  # the slots and the counter
    ended = views.instances(tables, now_ms=T0, limit=1000)
    assert len(ended) == RECENT_PER_PARTITION
    assert min(int(i["processInstanceKey"]) for i in ended) == 50  # the oldest were replaced
    assert len(tables.timeline) <= TIMELINE_BUCKETS
    assert views.processes(tables)[0]["completed"] == RECENT_PER_PARTITION + 50
    assert not tables.open


def test_only_folded_events_pass_the_header_filter() -> None:
    def passes(record: Record) -> bool:
        headers = record_headers(record)
        return wanted(*(header(headers, name) for name in (RECORD_TYPE, VALUE_TYPE, INTENT)))

    assert passes(job(JobIntent.COMPLETED, 1, T0, 1))
    assert passes(element(ProcessInstanceIntent.ELEMENT_ACTIVATED, 1, T0, instance=1))
    assert not passes(element(ProcessInstanceIntent.ELEMENT_ACTIVATING, 1, T0, instance=1))
    creation = command(ProcessInstanceCreationIntent.CREATE, ProcessInstanceCreationValue())
    assert creation.record_type is RecordType.COMMAND and not passes(creation)
    assert not wanted(None, None, None)
