"""What `partita analytics` must serve, computed independently from the log's events: per
process counts, element durations, job latencies and open incidents, and how close an
estimate from the analytics' histograms must come to the exact figure."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from partita.analytics.histogram import RELATIVE_ERROR
from partita.config import Config
from partita.protocol.enums import BpmnElementType, RecordType
from partita.protocol.intents import IncidentIntent, JobIntent, ProcessInstanceIntent
from partita.protocol.records import Record
from tests.support.worker_processes import read_log


def log_events(config: Config) -> list[Record]:
    return [
        r
        for records in read_log(config).partitions.values()
        for r in records
        if r.record_type is RecordType.EVENT
    ]


def nearest_rank(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1])


def close_to(estimate: float | None, exact: float) -> bool:
    """An estimate within the histograms' relative error of `exact` (and rounding)."""
    return estimate is not None and abs(estimate - exact) <= exact * RELATIVE_ERROR + 0.051


def expected_processes(events: list[Record]) -> list[dict[str, Any]]:
    counts: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)
    names = {
        ProcessInstanceIntent.ELEMENT_ACTIVATED: "started",
        ProcessInstanceIntent.ELEMENT_COMPLETED: "completed",
        ProcessInstanceIntent.ELEMENT_TERMINATED: "terminated",
    }
    for r in events:
        if r.intent in names and r.value.bpmn_element_type is BpmnElementType.PROCESS:
            counts[(r.value.bpmn_process_id, r.value.version)][names[r.intent]] += 1
    return [
        {
            "bpmnProcessId": process_id,
            "version": version,
            "started": c["started"],
            "completed": c["completed"],
            "terminated": c["terminated"],
            "active": c["started"] - c["completed"] - c["terminated"],
        }
        for (process_id, version), c in sorted(counts.items())
    ]


def expected_durations(events: list[Record]) -> dict[tuple[str, str], list[int]]:
    activated: dict[int, int] = {}
    durations: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in sorted(events, key=lambda r: (r.partition_id, r.position)):
        if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED:
            activated[r.key] = r.timestamp
        elif r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED and r.key in activated:
            key = (r.value.bpmn_process_id, r.value.element_id)
            durations[key].append(r.timestamp - activated.pop(r.key))
    return durations


def expected_job_latencies(events: list[Record]) -> dict[str, list[int]]:
    created: dict[int, int] = {}
    latencies: dict[str, list[int]] = defaultdict(list)
    for r in events:
        if r.intent is JobIntent.CREATED:
            created[r.key] = r.timestamp
        elif r.intent is JobIntent.COMPLETED:
            latencies[r.value.type].append(r.timestamp - created[r.key])
    return latencies


def expected_open_incidents(events: list[Record]) -> dict[int, Record]:
    open_incidents: dict[int, Record] = {}
    for r in events:
        if r.intent is IncidentIntent.CREATED:
            open_incidents[r.key] = r
        elif r.intent is IncidentIntent.RESOLVED:
            open_incidents.pop(r.key, None)
    return open_incidents
