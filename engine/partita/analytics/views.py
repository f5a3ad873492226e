"""The JSON the analytics serve: per-partition table entries merged into figures.

Every function reads the tables (see `appliers` for the key layout) and returns plain JSON-able
data; none writes. Keys of engine entities are served as strings, because a key can exceed
JavaScript's 2**53 safe integers. Times are epoch milliseconds; durations are milliseconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from partita.analytics.appliers import TIMELINE_BUCKET_MS, Table, Tables
from partita.analytics.histogram import Histogram

STATES = ("active", "completed", "terminated")


def _entries(table: Table) -> Iterable[tuple[list[str], Any]]:
    """(key fields without the partition, value) of every entry of `table`."""
    for key, value in list(table.items()):
        yield str(key).split("|")[1:], value


def _key(value: object) -> str | None:
    return None if value is None or value == -1 else str(value)


# -- processes --------------------------------------------------------------------------------


def processes(tables: Tables) -> list[dict[str, Any]]:
    """Instances started, completed, terminated and active per process id and version."""
    merged: dict[tuple[str, int], dict[str, int]] = defaultdict(
        lambda: {"started": 0, "completed": 0, "terminated": 0}
    )
    for fields, counts in _entries(tables.processes):
        process_id, version = fields[0], int(fields[1])
        for name in ("started", "completed", "terminated"):
            merged[(process_id, version)][name] += int(counts.get(name, 0))
    return [
        {
            "bpmnProcessId": process_id,
            "version": version,
            **counts,
            "active": counts["started"] - counts["completed"] - counts["terminated"],
        }
        for (process_id, version), counts in sorted(merged.items())
    ]


# -- elements ---------------------------------------------------------------------------------


def elements(tables: Tables, process: str | None = None) -> list[dict[str, Any]]:
    """Duration percentiles (activated to completed, ms) per process id and element id."""
    histograms: dict[tuple[str, str], Histogram] = defaultdict(Histogram)
    types: dict[tuple[str, str], str] = {}
    for fields, entry in _entries(tables.elements):
        process_id, element_id = fields[0], "|".join(fields[1:])
        if process is not None and process_id != process:
            continue
        histograms[(process_id, element_id)].merge(Histogram.from_json(entry.get("h")))
        types[(process_id, element_id)] = entry.get("type", "")
    return [
        {
            "bpmnProcessId": process_id,
            "elementId": element_id,
            "bpmnElementType": types[(process_id, element_id)],
            **histogram.summary(),
        }
        for (process_id, element_id), histogram in sorted(histograms.items())
    ]


# -- jobs -------------------------------------------------------------------------------------


def jobs(tables: Tables, now_ms: int, minutes: int = 30) -> list[dict[str, Any]]:
    """Per job type: counts per intent, created-to-completed latency, completions per minute.

    `completedLastMinute` counts completions in the last 60 s before `now_ms`; `perMinute` holds
    the completions of each of the last `minutes` minutes, oldest first.
    """
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    latency: dict[str, Histogram] = defaultdict(Histogram)
    for fields, stats in _entries(tables.jobs):
        job_type = "|".join(fields)
        for name, n in stats.items():
            if name != "h":
                counts[job_type][name] += int(n)
        latency[job_type].merge(Histogram.from_json(stats.get("h")))
    first_minute = now_ms - now_ms % 60_000 - (minutes - 1) * 60_000
    per_minute: dict[str, list[int]] = defaultdict(lambda: [0] * minutes)
    last_minute: dict[str, int] = defaultdict(int)
    for bucket, entry in _buckets(tables):
        for job_type, n in entry.get("jobs", {}).items():
            if bucket >= first_minute:
                index = (bucket - first_minute) // 60_000
                if index < minutes:
                    per_minute[job_type][index] += int(n)
            if now_ms - 60_000 < bucket + TIMELINE_BUCKET_MS and bucket <= now_ms:
                last_minute[job_type] += int(n)
    return [
        {
            "type": job_type,
            **counts[job_type],
            "open": counts[job_type]["created"]
            - counts[job_type]["completed"]
            - counts[job_type]["canceled"],
            "latency": latency[job_type].summary(),
            "completedLastMinute": last_minute[job_type],
            "perMinute": [
                {"minute": first_minute + i * 60_000, "completed": n}
                for i, n in enumerate(per_minute[job_type])
            ],
        }
        for job_type in sorted(counts)
    ]


# -- incidents and instances ------------------------------------------------------------------


def incidents(tables: Tables, process: str | None = None) -> list[dict[str, Any]]:
    """Open incidents (created and not resolved), newest first."""
    found = [
        _with_string_keys(incident)
        for _fields, incident in _entries(tables.incidents)
        if process is None or incident.get("bpmnProcessId") == process
    ]
    return sorted(found, key=lambda i: (-int(i.get("created") or 0), i["incidentKey"]))


def user_tasks(
    tables: Tables,
    *,
    assignee: str | None = None,
    candidate_group: str | None = None,
    candidate_user: str | None = None,
    process: str | None = None,
    due_before: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Open user tasks, the most urgent first (earliest due date, then highest priority, then
    oldest). `assignee` "" means unassigned; `due_before` is an ISO 8601 date-time and keeps
    the tasks due before it (tasks without a due date are left out then)."""
    limit_at = _instant(due_before) if due_before else None
    found = []
    for _fields, task in _entries(tables.user_tasks):
        if assignee is not None and task.get("assignee", "") != assignee:
            continue
        if candidate_group is not None and candidate_group not in task.get("candidateGroups", []):
            continue
        if candidate_user is not None and candidate_user not in task.get("candidateUsers", []):
            continue
        if process is not None and task.get("bpmnProcessId") != process:
            continue
        due = _instant(task["dueDate"]) if task.get("dueDate") else None
        if limit_at is not None and (due is None or due >= limit_at):
            continue
        found.append((due, _with_string_keys(task)))
    latest = datetime.max.replace(tzinfo=UTC)
    found.sort(
        key=lambda t: (t[0] or latest, -int(t[1].get("priority", 50)), t[1].get("created", 0))
    )
    return [task for _due, task in found[: max(0, limit)]]


def _instant(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"{text!r} needs an offset, e.g. 2026-12-31T17:00:00Z")
    return parsed


def instances(
    tables: Tables,
    now_ms: int,
    *,
    state: str | None = None,
    process: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Active instances and recently ended ones, most recently started first.

    Each has its state, start and end time, duration so far (or in total) and the number of its
    open incidents. `state` and `process` filter; at most `limit` are returned.
    """
    if state is not None and state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    open_incidents: dict[int, int] = defaultdict(int)
    for _fields, incident in _entries(tables.incidents):
        open_incidents[int(incident.get("processInstanceKey", -1))] += 1
    found = []
    for fields, instance in _entries(tables.instances):
        if fields[0] not in ("a", "r"):
            continue  # the slot counter
        if state is not None and instance.get("state") != state:
            continue
        if process is not None and instance.get("bpmnProcessId") != process:
            continue
        started, ended = instance.get("started"), instance.get("ended")
        key = int(instance["processInstanceKey"])
        found.append(
            {
                **_with_string_keys(instance),
                "durationMs": None if started is None else (ended or now_ms) - started,
                "incidents": open_incidents.get(key, 0),
            }
        )
    found.sort(key=lambda i: (-(i["started"] or i["ended"] or 0), i["processInstanceKey"]))
    return found[: max(0, limit)]


def _with_string_keys(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _key(value) if name.endswith("Key") else value for name, value in entry.items()}


# -- timeline and summary ---------------------------------------------------------------------


def _buckets(tables: Tables) -> Iterable[tuple[int, Mapping[str, Any]]]:
    for fields, entry in _entries(tables.timeline):
        yield int(fields[0]), entry


def timeline(tables: Tables, now_ms: int, minutes: int = 30) -> list[dict[str, Any]]:
    """Instances started, completed and terminated and jobs completed per 10-second bucket over
    the last `minutes` minutes, oldest first, gaps filled with zeros."""
    last = now_ms - now_ms % TIMELINE_BUCKET_MS
    first = last - (minutes * 60_000 // TIMELINE_BUCKET_MS - 1) * TIMELINE_BUCKET_MS
    merged: dict[int, dict[str, int]] = {}
    for bucket, entry in _buckets(tables):
        if first <= bucket <= last:
            into = merged.setdefault(
                bucket, {"started": 0, "completed": 0, "terminated": 0, "jobsCompleted": 0}
            )
            for name in ("started", "completed", "terminated"):
                into[name] += int(entry.get(name, 0))
            into["jobsCompleted"] += sum(int(n) for n in entry.get("jobs", {}).values())
    empty = {"started": 0, "completed": 0, "terminated": 0, "jobsCompleted": 0}
    return [
        {"t": bucket, **merged.get(bucket, empty)}
        for bucket in range(first, last + 1, TIMELINE_BUCKET_MS)
    ]


def summary(tables: Tables, now_ms: int) -> dict[str, Any]:
    """Totals over all processes, open incidents, job figures and how far each partition is."""
    per_process = processes(tables)
    per_type = jobs(tables, now_ms, minutes=1)
    progress = {
        int(partition): {
            "position": entry.get("position"),
            "timestamp": entry.get("timestamp"),
        }
        for partition, entry in list(tables.progress.items())
    }
    newest = max((p["timestamp"] or 0 for p in progress.values()), default=0)
    return {
        "instances": {
            name: sum(p[name] for p in per_process)
            for name in ("started", "completed", "terminated", "active")
        },
        "processes": len({p["bpmnProcessId"] for p in per_process}),
        "openIncidents": sum(1 for _ in _entries(tables.incidents)),
        "jobs": {
            name: sum(int(j.get(name, 0)) for j in per_type)
            for name in ("created", "completed", "failed", "completedLastMinute")
        },
        "partitions": dict(sorted(progress.items())),
        "newestEvent": newest or None,
        "now": now_ms,
    }
