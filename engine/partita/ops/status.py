"""`partita status`: what a deployment looks like from Kafka.

- the log: per partition, its start and end offsets and records held, the engine worker that
  owns it (consumer group `<ns>.engine`) and how far behind the engine is; a partition the
  engine stopped at a record it cannot apply shows as STOPPED, with the record's offset, value
  type, intent and the reason (the marker in the group's committed offset metadata, see
  `partita.stream.partition.stopped`);
- every other consumer group of the namespace that reads the log (analytics, export, the groups
  in PARTITA_DOWNSTREAM_GROUPS): its lag per partition, which also holds back truncation;
- job topics: jobs pushed and not yet taken by the workers of each type;
- snapshots: per partition, the newest complete snapshot, its position and age.

Read-only: it never joins a group or commits.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import admin_client, cluster_metadata
from partita.log.clients import ErrorReporter, engine_group, new_consumer
from partita.log.security import kafka_access
from partita.snapshots.store import manifests
from partita.stream.counters import decode as decode_counters
from partita.stream.partition.stopped import StoppedMarker
from partita.stream.partition.stopped import decode as decode_stopped

_TIMEOUT = 30.0


@dataclass(slots=True)
class PartitionStatus:
    partition: int
    start: int
    end: int
    owner: str = "-"
    engine_lag: int | None = None
    snapshot_position: int | None = None
    snapshot_age_s: float | None = None
    stopped: StoppedMarker | None = None
    """Set when the engine stopped this partition at a record it cannot apply."""
    turned_away: dict[str, int] = field(default_factory=dict)
    """What the partition's trust boundary refused (partita.stream.counters): records refused
    at admission, commands refused RESOURCE_EXHAUSTED, replies dropped."""

    @property
    def state(self) -> str:
        """STOPPED, processing (a worker owns it) or unowned."""
        if self.stopped is not None:
            return "STOPPED"
        return "unowned" if self.owner == "-" else "processing"


@dataclass(slots=True)
class GroupStatus:
    group: str
    topic: str
    state: str
    members: int
    lag: dict[int, int | None] = field(default_factory=dict)
    """Per partition; None when the group has committed nothing there."""

    @property
    def total_lag(self) -> int | None:
        known = [n for n in self.lag.values() if n is not None]
        return sum(known) if known else None


@dataclass(slots=True)
class Status:
    namespace: str
    bootstrap: str
    partitions: list[PartitionStatus]
    groups: list[GroupStatus]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for partition, status in zip(out["partitions"], self.partitions, strict=True):
            partition["state"] = status.state
        return out


def collect(config: Config) -> Status:
    access = kafka_access(config, KafkaRole.OPERATOR)
    admin = admin_client(access)
    reporter = ErrorReporter(access)
    consumer = new_consumer(
        access,
        {
            "group.id": f"{config.namespace}.status",  # never joins: metadata and offsets only
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "error_cb": reporter,
        },
    )
    try:
        topics = cluster_metadata(consumer, reporter, access, _TIMEOUT).topics
        log = config.log_topic
        if log not in topics:
            raise_missing(config)
        ends = _watermarks(consumer, log, len(topics[log].partitions))
        partitions = [PartitionStatus(p, low, high) for p, (low, high) in sorted(ends.items())]
        job_topics = sorted(t for t in topics if t.startswith(f"{config.namespace}.jobs."))
        groups = _groups(admin, config, consumer, ends, {t: topics[t] for t in job_topics})
        engine = next((g for g in groups if g.group == engine_group(config.namespace)), None)
        owners = _owners(admin, engine_group(config.namespace))
        stopped, turned_away = _markers(
            admin, engine_group(config.namespace), log, config.commands_topic
        )
        for status in partitions:
            status.owner = owners.get(status.partition, "-")
            status.stopped = stopped.get(status.partition)
            status.turned_away = turned_away.get(status.partition, {})
            if engine is not None:
                status.engine_lag = engine.lag.get(status.partition)
        if config.snapshots_topic in topics:
            _snapshots(consumer, config.snapshots_topic, partitions)
        return Status(config.namespace, config.bootstrap, partitions, groups)
    finally:
        consumer.close()


def raise_missing(config: Config) -> None:
    raise PartitaError(
        f"{config.log_topic} does not exist at {config.bootstrap}: run `partita topics apply`"
        " (or `partita up`), or check --namespace"
    )


_ELECTING = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)


def _electing(error: KafkaError) -> bool:
    """Whether `error` says a partition has no leader yet (or one this client does not know)."""
    return bool(error.retriable()) or error.code() in _ELECTING


def _watermarks(consumer: Consumer, topic: str, count: int) -> dict[int, tuple[int, int]]:
    """Each partition's (low, high) offsets. A partition whose leader the cluster is still
    electing (a topic just created, a broker restarting) answers a retriable error: asked again
    until `_TIMEOUT`, so status right after `topics apply` shows the topic, not the error."""
    deadline = time.monotonic() + _TIMEOUT
    out = {}
    for partition in range(count):
        while True:
            try:
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=_TIMEOUT, cached=False
                )
                break
            except KafkaException as error:
                if not _electing(error.args[0]) or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        out[partition] = (int(low), int(high))
    return out


def _groups(
    admin: AdminClient,
    config: Config,
    consumer: Consumer,
    log_ends: dict[int, tuple[int, int]],
    job_topics: dict[str, Any],
) -> list[GroupStatus]:
    listed = admin.list_consumer_groups(request_timeout=_TIMEOUT).result()
    names = sorted(
        {g.group_id for g in listed.valid if g.group_id.startswith(f"{config.namespace}.")}
        | set(config.downstream_groups)
    )
    descriptions = {}
    if names:
        for name, future in admin.describe_consumer_groups(names, request_timeout=_TIMEOUT).items():
            descriptions[name] = future.result()
    found = []
    for name in names:
        request = [ConsumerGroupTopicPartitions(name)]
        result = admin.list_consumer_group_offsets(request, request_timeout=_TIMEOUT)
        committed = result[name].result().topic_partitions or []
        by_topic: dict[str, dict[int, int]] = {}
        for tp in committed:
            if tp.offset >= 0:
                by_topic.setdefault(tp.topic, {})[tp.partition] = tp.offset
        description = descriptions.get(name)
        state = getattr(getattr(description, "state", None), "name", "UNKNOWN")
        members = len(getattr(description, "members", []) or [])
        if config.log_topic in by_topic or name in config.downstream_groups:
            offsets = by_topic.get(config.log_topic, {})
            lag = {p: _lag(offsets.get(p), high) for p, (_, high) in log_ends.items()}
            found.append(GroupStatus(name, config.log_topic, state, members, lag))
        for topic, offsets in sorted(by_topic.items()):
            if topic in job_topics:
                ends = _watermarks(consumer, topic, len(job_topics[topic].partitions))
                lag = {p: _lag(offsets.get(p), high) for p, (_, high) in ends.items()}
                found.append(GroupStatus(name, topic, state, members, lag))
    return found


def _lag(committed: int | None, high: int) -> int | None:
    return None if committed is None else max(high - committed, 0)


def _owners(admin: AdminClient, group: str) -> dict[int, str]:
    try:
        description = admin.describe_consumer_groups([group], request_timeout=_TIMEOUT)[
            group
        ].result()
    except Exception:  # the group does not exist yet: no owners
        return {}
    owners = {}
    for member in description.members or []:
        for tp in member.assignment.topic_partitions or []:
            owners[tp.partition] = f"{member.client_id}@{member.host.lstrip('/')}"
    return owners


def _markers(
    admin: AdminClient, group: str, topic: str, ingress: str
) -> tuple[dict[int, StoppedMarker], dict[int, dict[str, int]]]:
    """From `group`'s committed offsets: the partitions of `topic` that carry a stopped marker,
    and the trust boundary's counters carried by the offsets of `ingress`."""
    request = [ConsumerGroupTopicPartitions(group)]
    try:
        result = admin.list_consumer_group_offsets(request, request_timeout=_TIMEOUT)
        committed = result[group].result().topic_partitions or []
    except KafkaException:  # the group does not exist yet: nothing is stopped
        return {}, {}
    stopped, turned_away = {}, {}
    for tp in committed:
        if tp.topic == topic:
            marker = decode_stopped(tp.metadata)
            if marker is not None:
                stopped[tp.partition] = marker
        elif tp.topic == ingress:
            turned_away[tp.partition] = decode_counters(tp.metadata)
    return stopped, turned_away


def _snapshots(consumer: Consumer, topic: str, partitions: list[PartitionStatus]) -> None:
    now_ms = time.time() * 1000
    for status in partitions:
        found = manifests(consumer, topic, status.partition)
        if found:
            newest = found[0]
            status.snapshot_position = newest.processed_position
            status.snapshot_age_s = round((now_ms - newest.created_ms) / 1000, 1)


def render(status: Status) -> str:
    """The status as the aligned tables a person reads."""
    lines = [f"namespace {status.namespace} at {status.bootstrap}", "", "log partitions:"]
    rows: list[tuple[str, ...]] = [
        ("partition", "state", "start", "end", "records", "owner", "engine lag", "snapshot")
    ]
    for p in status.partitions:
        snapshot = "none"
        if p.snapshot_position is not None:
            snapshot = f"@{p.snapshot_position}, {_age(p.snapshot_age_s)} ago"
        lag = "-" if p.engine_lag is None else str(p.engine_lag)
        rows.append(
            (
                str(p.partition),
                p.state,
                str(p.start),
                str(p.end),
                str(p.end - p.start),
                p.owner,
                lag,
                snapshot,
            )
        )
    lines += _table(rows)
    for p in status.partitions:
        if p.stopped is not None:
            lines.append(
                f"  partition {p.partition} STOPPED at offset {p.stopped.offset}"
                f" ({p.stopped.value_type} {p.stopped.intent}): {p.stopped.reason}"
            )
    for p in status.partitions:
        if any(p.turned_away.values()):
            counts = p.turned_away
            lines.append(
                f"  partition {p.partition} turned away: {counts.get('refused', 0)} ingress"
                f" records refused, {counts.get('backpressured', 0)} commands refused"
                f" RESOURCE_EXHAUSTED (backpressure), {counts.get('replies_dropped', 0)} replies"
                " dropped"
            )
    if any(p.stopped is not None for p in status.partitions):
        lines.append(
            "  (docs/operations.md, 'A record the engine cannot apply', says how to get past it)"
        )
    lines += ["", "consumer groups:"]
    if not status.groups:
        lines.append("  (none)")
    else:
        rows = [("group", "topic", "state", "members", "lag", "per partition")]
        for g in status.groups:
            total = "no commits" if g.total_lag is None else str(g.total_lag)
            per = " ".join(f"{p}:{'-' if n is None else n}" for p, n in sorted(g.lag.items()))
            rows.append((g.group, g.topic, g.state, str(g.members), total, per))
        lines += _table(rows)
    return "\n".join(lines)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
