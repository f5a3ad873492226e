"""Topic specs from `topics/topics.toml` and their idempotent application to a cluster.

Applying never changes an existing topic: one that exists with another partition count or a
conflicting config is reported as a TopicConflictError naming each difference, because silently
using it would break routing (keys encode partitions) or retention guarantees.
"""

from __future__ import annotations

import re
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.cimpl import NewTopic

from partita.config import Config
from partita.errors import PartitaError
from partita.protocol.enums import ValueType
from partita.resources import contract_dir

_TIMEOUT_S = 30.0


class TopicSpecError(PartitaError):
    """topics.toml is malformed; the message names the topic and the field."""


class TopicConflictError(PartitaError):
    """An existing topic differs from its spec; the message lists every difference."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic as Partita needs it, with the namespace and partition count resolved."""

    key: str
    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)
    description: str = ""


class TopicOutcome(Enum):
    CREATED = "created"
    EXISTS = "exists"


def load_specs(config: Config, text: str | None = None) -> list[TopicSpec]:
    """The specs of `topics/topics.toml` (or `text`) resolved for `config`."""
    if text is None:
        text = (contract_dir("topics") / "topics.toml").read_text()
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TopicSpecError(f"topics.toml is not valid TOML: {exc}") from None
    specs = []
    for key, raw in document.get("topics", {}).items():
        specs.append(_spec(key, raw, config))
    if not specs:
        raise TopicSpecError("topics.toml declares no [topics.<name>] table")
    return specs


_JOB_TYPE_RE = re.compile(r"^[A-Za-z0-9._-]+$")


def job_topic_spec(config: Config, job_type: str, text: str | None = None) -> TopicSpec:
    """The spec of `<ns>.jobs.<type>` from the [job_topic] template of topics.toml."""
    if not _JOB_TYPE_RE.match(job_type):
        raise TopicSpecError(
            f"job type {job_type!r} cannot name a Kafka topic (letters, digits, '.', '_', '-'"
            " only); workers of this type must poll (JOB_BATCH ACTIVATE) instead"
        )
    if text is None:
        text = (contract_dir("topics") / "topics.toml").read_text()
    try:
        template = tomllib.loads(text).get("job_topic")
    except tomllib.TOMLDecodeError as exc:
        raise TopicSpecError(f"topics.toml is not valid TOML: {exc}") from None
    if not isinstance(template, dict):
        raise TopicSpecError("topics.toml has no [job_topic] template")
    raw = {**template, "name": str(template.get("name", "")).replace("{type}", job_type)}
    spec = _spec("job_topic", raw, config)
    if len(spec.name) > 249:
        raise TopicSpecError(f"job topic name {spec.name!r} is longer than Kafka's 249 characters")
    return spec


EXPORT_RETENTION_MS = str(7 * 24 * 3600 * 1000)


def export_topic_name(namespace: str, value_type: ValueType) -> str:
    """`<ns>.export.process-instance` for PROCESS_INSTANCE: where `partita export` writes."""
    return f"{namespace}.export.{value_type.name.lower().replace('_', '-')}"


def export_topic_specs(config: Config) -> list[TopicSpec]:
    """The topics of `partita export`, one per value type, with the log's partition count;
    `partita topics apply --export` creates them, so the exporter needs no Create right."""
    return [
        TopicSpec(
            key="export",
            name=export_topic_name(config.namespace, value_type),
            partitions=config.partitions,
            replication_factor=config.replication_factor,
            config={"cleanup.policy": "delete", "retention.ms": EXPORT_RETENTION_MS},
            description="the log's events of one value type as JSON (partita export)",
        )
        for value_type in ValueType
    ]


def _spec(key: str, raw: Mapping[str, Any], config: Config) -> TopicSpec:
    where = f"topics.toml [topics.{key}]"
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise TopicSpecError(f"{where}: 'name' must be a non-empty string")
    partitions = raw.get("partitions")
    if partitions == "log":
        partitions = config.partitions
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise TopicSpecError(f"{where}: 'partitions' must be a positive integer or \"log\"")
    topic_config = raw.get("config", {})
    if not all(isinstance(v, str) for v in topic_config.values()):
        raise TopicSpecError(f"{where}: every config value must be a string, as Kafka takes it")
    return TopicSpec(
        key=key,
        name=name.format(ns=config.namespace),
        partitions=partitions,
        replication_factor=config.replication_factor,
        config=dict(topic_config),
        description=str(raw.get("description", "")),
    )


def apply_topics(admin: AdminClient, specs: list[TopicSpec]) -> dict[str, TopicOutcome]:
    """Create missing topics and verify existing ones. Idempotent.

    Raises TopicConflictError listing every existing topic that differs from its spec; topics
    that could be created are created first, so one conflict does not hide the others.
    """
    metadata = admin.list_topics(timeout=_TIMEOUT_S)
    existing = {spec.name for spec in specs if spec.name in metadata.topics}
    outcomes: dict[str, TopicOutcome] = {}
    missing = [spec for spec in specs if spec.name not in existing]
    if missing:
        futures = admin.create_topics(
            [
                NewTopic(s.name, s.partitions, s.replication_factor, config=dict(s.config))
                for s in missing
            ],
            request_timeout=_TIMEOUT_S,
        )
        for name, future in futures.items():
            try:
                future.result()
                outcomes[name] = TopicOutcome.CREATED
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:  # lost a race: verify
                    raise PartitaError(
                        f"creating topic {name!r} failed: {exc.args[0].str()}"
                    ) from None
                existing.add(name)
        metadata = admin.list_topics(timeout=_TIMEOUT_S)

    conflicts: list[str] = []
    verify = [spec for spec in specs if spec.name in existing]
    actual_configs = _describe_configs(admin, [s.name for s in verify]) if verify else {}
    for spec in verify:
        outcomes[spec.name] = TopicOutcome.EXISTS
        actual_partitions = _partition_count(admin, spec.name)
        if actual_partitions != spec.partitions:
            conflicts.append(
                f"{spec.name}: has {actual_partitions} partitions, the spec needs {spec.partitions}"
            )
        actual = actual_configs[spec.name]
        for config_key, wanted in spec.config.items():
            found = actual.get(config_key)
            if found != wanted:
                conflicts.append(f"{spec.name}: {config_key}={found!r}, the spec needs {wanted!r}")
    if conflicts:
        raise TopicConflictError(
            "existing topics do not match topics/topics.toml; Partita will not use them:\n  "
            + "\n  ".join(conflicts)
            + "\nDelete or fix these topics, or choose another namespace (PARTITA_NAMESPACE)."
        )
    return outcomes


def _partition_count(admin: AdminClient, name: str) -> int:
    """Partitions of an existing topic, waiting briefly for metadata of a just-created one."""
    deadline = time.monotonic() + _TIMEOUT_S
    while True:
        topic = admin.list_topics(topic=name, timeout=_TIMEOUT_S).topics.get(name)
        if topic is not None and topic.error is None and topic.partitions:
            return len(topic.partitions)
        if time.monotonic() > deadline:
            raise PartitaError(f"topic {name!r} exists but its metadata is not available")
        time.sleep(0.2)


def _describe_configs(admin: AdminClient, names: list[str]) -> dict[str, dict[str, str]]:
    """Topic configs by name. A topic created a moment ago may not be known to every broker
    yet (metadata propagates asynchronously), so UNKNOWN_TOPIC_OR_PART is retried briefly."""
    deadline = time.monotonic() + _TIMEOUT_S
    while True:
        try:
            return _describe_configs_once(admin, names)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                raise PartitaError(f"describing topics {names} failed: {error.str()}") from None
            time.sleep(0.2)


def _describe_configs_once(admin: AdminClient, names: list[str]) -> dict[str, dict[str, str]]:
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in names]
    result: dict[str, dict[str, str]] = {}
    for resource, future in admin.describe_configs(resources, request_timeout=_TIMEOUT_S).items():
        entries = future.result()
        result[resource.name] = {key: entry.value for key, entry in entries.items()}
    return result
