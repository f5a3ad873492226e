"""Event appliers of the analytics: fold one log EVENT into the analytics tables.

The tables are plain mutable mappings here (faust tables in the app, dicts in unit tests).
Every key starts with the Kafka partition the event was read from: faust writes a table's
changelog to the partition of the event being processed and keeps one RocksDB per partition, so
a key must never be written from two partitions. `views` merges the partitions when serving.

Key layout (`p` is the source partition; values are JSON-able):

| table | key | value |
|---|---|---|
| `processes` | `p|bpmnProcessId|version` | `{"started", "completed", "terminated"}` |
| `open` | `p|e|elementInstanceKey`, `p|j|jobKey` | timestamp of activation / job creation |
| `elements` | `p|bpmnProcessId|elementId` | `{"type", "h"}`: histogram of durations in ms |
| `jobs` | `p|jobType` | counts per intent and `"h"`: histogram of created-to-completed ms |
| `incidents` | `p|incidentKey` | the open incident |
| `user_tasks` | `p|userTaskKey` | the open user task (assignee, candidates, dates, priority) |
| `instances` | `p|a|processInstanceKey` | an active instance |
|  | `p|r|slot` | a recently ended instance, slot = sequence % RECENT_PER_PARTITION |
|  | `p|next` | the next recent-slot sequence number |
| `timeline` | `p|bucketStartMs` | `{"started", "completed", "terminated", "jobs": {type: n}}` |
| `progress` | `p` | `{"position", "timestamp", "bucket"}` of the newest folded event |

Guarantees: applying an event touches only keys of its own partition; the tables stay bounded by
the live entities (open elements, jobs, incidents, active instances) plus fixed-size windows
(`RECENT_PER_PARTITION` ended instances, `TIMELINE_BUCKETS` timeline buckets). Appliers read no
clock: every time figure comes from record timestamps, so replaying the log gives the same
tables.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, fields
from typing import Any

from partita.analytics.histogram import Histogram
from partita.analytics.skipped import SkippedRecords
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import BpmnElementType, RecordType, ValueType
from partita.protocol.intents import (
    IncidentIntent,
    JobIntent,
    ProcessInstanceIntent,
    UserTaskIntent,
)
from partita.protocol.records import Record
from partita.protocol.values import IncidentValue, JobValue, ProcessInstanceValue, UserTaskValue

RECENT_PER_PARTITION = 200
"""Ended instances remembered per partition for `/api/instances`."""
TIMELINE_BUCKET_MS = 10_000
TIMELINE_BUCKETS = 360
"""The timeline keeps one hour of 10-second buckets per partition."""

Table = MutableMapping[str, Any]

FOLDED: frozenset[tuple[bytes, bytes]] = frozenset(
    (value_type.value.encode(), intent.name.encode())
    for value_type, intents in (
        (
            ValueType.PROCESS_INSTANCE,
            (
                ProcessInstanceIntent.ELEMENT_ACTIVATED,
                ProcessInstanceIntent.ELEMENT_COMPLETED,
                ProcessInstanceIntent.ELEMENT_TERMINATED,
            ),
        ),
        (
            ValueType.JOB,
            (
                JobIntent.CREATED,
                JobIntent.COMPLETED,
                JobIntent.FAILED,
                JobIntent.CANCELED,
                JobIntent.ERROR_THROWN,
                JobIntent.TIMED_OUT,
            ),
        ),
        (ValueType.INCIDENT, (IncidentIntent.CREATED, IncidentIntent.RESOLVED)),
        (
            ValueType.USER_TASK,
            (
                UserTaskIntent.CREATED,
                UserTaskIntent.ASSIGNED,
                UserTaskIntent.UPDATED,
                UserTaskIntent.COMPLETED,
                UserTaskIntent.CANCELED,
            ),
        ),
    )
    for intent in intents
)
"""(valueType, intent) header pairs of the EVENTs the appliers use; others are not decoded."""

JOB_COUNTS = {
    JobIntent.CREATED: "created",
    JobIntent.COMPLETED: "completed",
    JobIntent.FAILED: "failed",
    JobIntent.CANCELED: "canceled",
    JobIntent.ERROR_THROWN: "errorThrown",
    JobIntent.TIMED_OUT: "timedOut",
}


@dataclass(frozen=True, slots=True)
class Tables:
    """The analytics tables, by name (see the module docs for their keys)."""

    processes: Table
    open: Table
    elements: Table
    jobs: Table
    incidents: Table
    user_tasks: Table
    instances: Table
    timeline: Table
    progress: Table

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def in_memory(cls) -> Tables:
        """Tables backed by dicts (tests, tools)."""
        return cls(**{name: {} for name in cls.names()})


def wanted(record_type: bytes | None, value_type: bytes | None, intent: bytes | None) -> bool:
    """True when a record with these headers is an EVENT the appliers fold."""
    return record_type == b"EVENT" and (value_type or b"", intent or b"") in FOLDED


def fold(  # noqa: PLR0917
    tables: Tables,
    codec: RecordCodec,
    skipped: SkippedRecords,
    topic: str,
    partition: int,
    offset: int,
    value: bytes,
    headers: Any,
) -> bool:
    """Decode the log record at `topic/partition@offset` and `apply` it. A record that does not
    decode, or whose folding raises, is reported to `skipped` and left out (False): the tables
    keep what they had, apart from what a folding that raised half-way wrote. Never raises."""
    try:
        record = codec.decode(value, topic=topic, partition=partition, offset=offset)
        return apply(tables, partition, record)
    except Exception as error:
        skipped.report(topic, partition, offset, headers, error)
        return False


def apply(tables: Tables, partition: int, record: Record) -> bool:
    """Fold `record`, read from Kafka partition `partition`, into `tables`.

    Returns False (and changes nothing) for records the analytics ignore, and for a record at
    or below the position last folded on its partition (a redelivery), so folding is
    idempotent per partition. Never raises for a well-formed record whose entity is unknown
    (e.g. a completion whose activation was before the log's start): such an event counts where
    it can and is skipped where it cannot.
    """
    if record.record_type is not RecordType.EVENT:
        return False
    if record.position >= 0:
        last = (tables.progress.get(str(partition)) or {}).get("position")
        if last is not None and record.position <= last:
            return False
    value = record.value
    if isinstance(value, ProcessInstanceValue):
        folded = _process_instance(tables, partition, record, value)
    elif isinstance(value, JobValue):
        folded = _job(tables, partition, record, value)
    elif isinstance(value, IncidentValue):
        folded = _incident(tables, partition, record, value)
    elif isinstance(value, UserTaskValue):
        folded = _user_task(tables, partition, record, value)
    else:
        folded = False
    if folded:
        _advance(tables, partition, record)
    return folded


# -- process instances and elements -----------------------------------------------------------


def _process_instance(tables: Tables, p: int, record: Record, value: ProcessInstanceValue) -> bool:
    intent = record.intent
    is_process = value.bpmn_element_type is BpmnElementType.PROCESS
    open_key = f"{p}|e|{record.key}"
    if intent is ProcessInstanceIntent.ELEMENT_ACTIVATED:
        tables.open[open_key] = record.timestamp
        if is_process:
            _count_process(tables, p, value, "started")
            _count_timeline(tables, p, record.timestamp, "started")
            tables.instances[f"{p}|a|{value.process_instance_key}"] = {
                "processInstanceKey": value.process_instance_key,
                "bpmnProcessId": value.bpmn_process_id,
                "version": value.version,
                "state": "active",
                "started": record.timestamp,
                "ended": None,
                "parentProcessInstanceKey": value.parent_process_instance_key,
            }
        return True
    if intent not in (
        ProcessInstanceIntent.ELEMENT_COMPLETED,
        ProcessInstanceIntent.ELEMENT_TERMINATED,
    ):
        return False
    completed = intent is ProcessInstanceIntent.ELEMENT_COMPLETED
    activated = tables.open.pop(open_key, None)
    if completed and activated is not None:
        key = f"{p}|{value.bpmn_process_id}|{value.element_id}"
        entry = tables.elements.get(key) or {"type": value.bpmn_element_type.value}
        histogram = Histogram.from_json(entry.get("h"))
        histogram.add(record.timestamp - int(activated))
        tables.elements[key] = {**entry, "h": histogram.to_json()}
    if is_process:
        state = "completed" if completed else "terminated"
        _count_process(tables, p, value, state)
        _count_timeline(tables, p, record.timestamp, state)
        _end_instance(tables, p, record, value, state)
    return True


def _count_process(tables: Tables, p: int, value: ProcessInstanceValue, what: str) -> None:
    key = f"{p}|{value.bpmn_process_id}|{value.version}"
    counts = dict(tables.processes.get(key) or {"started": 0, "completed": 0, "terminated": 0})
    counts[what] += 1
    tables.processes[key] = counts


def _end_instance(
    tables: Tables, p: int, record: Record, value: ProcessInstanceValue, state: str
) -> None:
    instance = tables.instances.pop(f"{p}|a|{value.process_instance_key}", None) or {
        "processInstanceKey": value.process_instance_key,
        "bpmnProcessId": value.bpmn_process_id,
        "version": value.version,
        "started": None,
        "parentProcessInstanceKey": value.parent_process_instance_key,
    }
    sequence = int(tables.instances.get(f"{p}|next") or 0)
    tables.instances[f"{p}|r|{sequence % RECENT_PER_PARTITION}"] = {
        **instance,
        "state": state,
        "ended": record.timestamp,
    }
    tables.instances[f"{p}|next"] = sequence + 1


# -- jobs -------------------------------------------------------------------------------------


def _job(tables: Tables, p: int, record: Record, value: JobValue) -> bool:
    intent = record.intent
    counter = JOB_COUNTS.get(intent)  # type: ignore[call-overload]
    if counter is None:
        return False
    key = f"{p}|{value.type}"
    stats = dict(tables.jobs.get(key) or {name: 0 for name in JOB_COUNTS.values()})
    stats[counter] = stats.get(counter, 0) + 1
    open_key = f"{p}|j|{record.key}"
    if intent is JobIntent.CREATED:
        tables.open[open_key] = record.timestamp
    elif intent in (JobIntent.COMPLETED, JobIntent.CANCELED):
        created = tables.open.pop(open_key, None)
        if intent is JobIntent.COMPLETED:
            if created is not None:
                histogram = Histogram.from_json(stats.get("h"))
                histogram.add(record.timestamp - int(created))
                stats["h"] = histogram.to_json()
            _count_timeline(tables, p, record.timestamp, "jobs", value.type)
    tables.jobs[key] = stats
    return True


# -- incidents --------------------------------------------------------------------------------


def _incident(tables: Tables, p: int, record: Record, value: IncidentValue) -> bool:
    key = f"{p}|{record.key}"
    if record.intent is IncidentIntent.CREATED:
        tables.incidents[key] = {
            "incidentKey": record.key,
            "errorType": value.error_type.value,
            "errorMessage": value.error_message,
            "bpmnProcessId": value.bpmn_process_id,
            "processInstanceKey": value.process_instance_key,
            "elementId": value.element_id,
            "elementInstanceKey": value.element_instance_key,
            "jobKey": value.job_key,
            "created": record.timestamp,
        }
        return True
    if record.intent is IncidentIntent.RESOLVED:
        tables.incidents.pop(key, None)
        return True
    return False


# -- user tasks -------------------------------------------------------------------------------


def _user_task(tables: Tables, p: int, record: Record, value: UserTaskValue) -> bool:
    """An open user task as its last CREATED, ASSIGNED or UPDATED event shows it; gone once
    completed or cancelled."""
    key = f"{p}|{record.key}"
    if record.intent in (UserTaskIntent.COMPLETED, UserTaskIntent.CANCELED):
        tables.user_tasks.pop(key, None)
        return True
    created = (tables.user_tasks.get(key) or {}).get("created", record.timestamp)
    tables.user_tasks[key] = {
        "userTaskKey": record.key,
        "state": "CREATED",
        "assignee": value.assignee,
        "candidateGroups": list(value.candidate_groups_list),
        "candidateUsers": list(value.candidate_users_list),
        "dueDate": value.due_date,
        "followUpDate": value.follow_up_date,
        "priority": value.priority,
        "externalFormReference": value.external_form_reference,
        "bpmnProcessId": value.bpmn_process_id,
        "processInstanceKey": value.process_instance_key,
        "elementId": value.element_id,
        "elementInstanceKey": value.element_instance_key,
        "created": created,
    }
    return True


# -- timeline and progress --------------------------------------------------------------------


def bucket_of(timestamp: int) -> int:
    """Start (epoch ms) of the timeline bucket holding `timestamp`."""
    return timestamp - timestamp % TIMELINE_BUCKET_MS


def _count_timeline(
    tables: Tables, p: int, timestamp: int, what: str, job_type: str | None = None
) -> None:
    bucket = bucket_of(timestamp)
    newest = (tables.progress.get(str(p)) or {}).get("bucket")
    if newest is not None and bucket <= newest - TIMELINE_BUCKETS * TIMELINE_BUCKET_MS:
        return  # older than the window (a clock step back): already pruned
    key = f"{p}|{bucket}"
    counts = dict(
        tables.timeline.get(key) or {"started": 0, "completed": 0, "terminated": 0, "jobs": {}}
    )
    if job_type is None:
        counts[what] += 1
    else:
        jobs = dict(counts["jobs"])
        jobs[job_type] = jobs.get(job_type, 0) + 1
        counts["jobs"] = jobs
    tables.timeline[key] = counts


def _advance(tables: Tables, p: int, record: Record) -> None:
    """Remember the newest folded event of partition `p`; prune timeline buckets it outdates."""
    previous = tables.progress.get(str(p)) or {}
    bucket = bucket_of(record.timestamp)
    newest = previous.get("bucket")
    if newest is None or bucket > newest:
        window = TIMELINE_BUCKETS * TIMELINE_BUCKET_MS
        if newest is not None:  # the kept window was (newest - window, newest]
            last = min(bucket - window, newest)
            for expired in range(
                newest - window + TIMELINE_BUCKET_MS, last + 1, TIMELINE_BUCKET_MS
            ):
                tables.timeline.pop(f"{p}|{expired}", None)
        newest = bucket
    tables.progress[str(p)] = {
        "position": record.position,
        "timestamp": max(record.timestamp, int(previous.get("timestamp") or 0)),
        "bucket": newest,
    }
