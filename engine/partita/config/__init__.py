"""The one typed configuration object, built from environment variables and CLI flags.

Every setting is declared once, in `partita.config.settings` (its variable, type, default, help
and flag); `Config`'s defaults and `Config.from_env` are built from that table, and
docs/configuration.md is generated from it. Every default works on a laptop; CLI flags override
the environment (`Config.with_overrides`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from partita.config import settings as s
from partita.config.parsers import parse_duration, parse_path
from partita.config.settings import SETTINGS
from partita.errors import ConfigError
from partita.log.properties import read_properties

DEFAULT_NAMESPACE: str = s.NAMESPACE.default
DEFAULT_PARTITIONS: int = s.PARTITIONS.default
DEFAULT_KAFKA_PORT: int = s.KAFKA_PORT.default
DEFAULT_CONTROLLER_PORT: int = s.CONTROLLER_PORT.default


class KafkaRole(StrEnum):
    """What a Kafka client does for Partita, and so which principal and ACLs it needs."""

    ENGINE = "engine"
    CLIENT = "client"
    JOB_WORKER = "job-worker"
    ANALYTICS = "analytics"
    EXPORTER = "exporter"
    OPERATOR = "operator"
    GATEWAY = "gateway"

    @property
    def variable(self) -> str:
        """The environment variable naming this role's own properties file."""
        return f"PARTITA_KAFKA_CONFIG_{self.name}"


_NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")


def duration_ms(text: str, what: str) -> int:
    """Milliseconds from an ISO-8601 duration (`PT5M`) or a plain number of milliseconds."""
    return parse_duration(text, what)


_ENGINE_TOPIC_RE = re.compile(r"\.(log|commands|snapshots)$|\.jobs\.")


def is_engine_topic(topic: str) -> bool:
    """True for a topic name shaped like a log, ingress, snapshot or job topic of any
    namespace: such topics never take replies, whatever the configuration says."""
    return _ENGINE_TOPIC_RE.search(topic) is not None


def default_home() -> Path:
    """`.partita` in the source checkout when running from one, else a per-user folder."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "engine" / "partita").is_dir():
        return checkout / ".partita"
    return Path.home() / ".local" / "share" / "partita"


@dataclass(frozen=True, slots=True)
class Config:
    """Settings shared by every command. Immutable; derive variants with `with_overrides`."""

    bootstrap_servers: str | None = s.BOOTSTRAP_SERVERS.default
    namespace: str = s.NAMESPACE.default
    partitions: int = s.PARTITIONS.default
    replication_factor: int = s.REPLICATION_FACTOR.default
    home: Path = Path(".partita")
    """PARTITA_HOME; `from_env` gives `default_home()` when it is unset."""
    kafka_port: int = s.KAFKA_PORT.default
    controller_port: int = s.CONTROLLER_PORT.default
    native: str = s.NATIVE.default
    job_push_limit: int = s.JOB_PUSH_LIMIT.default
    job_push_timeout_ms: int = s.JOB_PUSH_TIMEOUT_MS.default
    message_ttl_ms: int = s.MESSAGE_TTL.default
    snapshot_every_records: int = s.SNAPSHOT_RECORDS.default
    snapshot_interval_ms: int = s.SNAPSHOT_INTERVAL.default
    downstream_groups: tuple[str, ...] = s.DOWNSTREAM_GROUPS.default
    truncate: bool = s.TRUNCATE.default
    standby: bool = s.STANDBY.default
    backpressure_lag: int = s.BACKPRESSURE_LAG.default
    offsets_commit_ms: int = s.OFFSETS_COMMIT_MS.default
    skip_records: frozenset[tuple[int, int]] = s.SKIP_RECORDS.default
    """(partition, offset) of log records every replay and processing leaves out."""
    reply_topics: tuple[str, ...] = s.REPLY_TOPICS.default
    """Extra topics replies may go to, besides `<ns>.replies` (see `allowed_reply_topics`)."""
    kafka_config: Path | None = s.KAFKA_CONFIG.default
    """PARTITA_KAFKA_CONFIG: Kafka client properties merged into every client."""
    kafka_role_configs: tuple[tuple[KafkaRole, Path], ...] = ()
    """PARTITA_KAFKA_CONFIG_<ROLE>: properties merged over `kafka_config` for one role."""

    def __post_init__(self) -> None:
        if not _NAMESPACE_RE.match(self.namespace):
            raise ConfigError(
                f"namespace {self.namespace!r} is not a valid topic prefix: use letters, digits,"
                " '_' and '-', starting with a letter or digit"
            )
        if self.partitions < 1:
            raise ConfigError(f"partitions must be at least 1, got {self.partitions}")
        if self.replication_factor == 0 or self.replication_factor < -1:
            raise ConfigError(
                f"replication factor must be -1 (cluster default) or >= 1,"
                f" got {self.replication_factor}"
            )
        for name in ("kafka_port", "controller_port"):
            port = getattr(self, name)
            if not 1 <= port <= 65535:
                raise ConfigError(f"{name} must be a TCP port (1-65535), got {port}")
        if self.job_push_limit < 1 or self.job_push_timeout_ms < 1:
            raise ConfigError(
                "PARTITA_JOB_PUSH_LIMIT and PARTITA_JOB_PUSH_TIMEOUT_MS must be at least 1"
            )
        if self.backpressure_lag < 0:
            raise ConfigError(
                f"PARTITA_BACKPRESSURE_LAG must be 0 (off) or positive, got {self.backpressure_lag}"
            )
        if self.offsets_commit_ms < 0:
            raise ConfigError(
                f"PARTITA_OFFSETS_COMMIT_MS must be 0 (every transaction) or positive,"
                f" got {self.offsets_commit_ms}"
            )
        for topic in self.reply_topics:
            if is_engine_topic(topic):
                raise ConfigError(
                    f"PARTITA_REPLY_TOPICS names {topic!r}, a log, ingress, snapshot or job"
                    " topic: replies may never go there; use a topic of the application's own"
                )
        s.NATIVE.parse(self.native, s.NATIVE.env)
        if self.kafka_port == self.controller_port:
            raise ConfigError(f"kafka_port and controller_port are both {self.kafka_port}")

    @property
    def uses_local_broker(self) -> bool:
        """True when no external cluster is configured, so `partita kafka up` runs one."""
        return self.bootstrap_servers is None

    @property
    def bootstrap(self) -> str:
        """The address clients connect to: the external cluster or the local broker."""
        if self.bootstrap_servers is not None:
            return self.bootstrap_servers
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def log_topic(self) -> str:
        return f"{self.namespace}.log"

    @property
    def commands_topic(self) -> str:
        """The ingress topic: clients write commands here, and nowhere else."""
        return f"{self.namespace}.commands"

    @property
    def replies_topic(self) -> str:
        return f"{self.namespace}.replies"

    @property
    def allowed_reply_topics(self) -> frozenset[str]:
        """Where the engine may write replies: `<ns>.replies` and `PARTITA_REPLY_TOPICS`."""
        return frozenset((self.replies_topic, *self.reply_topics))

    @property
    def snapshots_topic(self) -> str:
        return f"{self.namespace}.snapshots"

    def job_topic(self, job_type: str) -> str:
        """`<ns>.jobs.<type>`: activated jobs of one type pushed to its workers ("" gives the
        prefix every job topic of the namespace shares)."""
        return f"{self.namespace}.jobs.{job_type}"

    def with_overrides(self, **overrides: Any) -> Config:
        """A copy with the given fields replaced; `None` values are ignored."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def kafka_env(self) -> dict[str, str]:
        """The environment variables that give a child process these Kafka settings."""
        env = {role.variable: str(path) for role, path in self.kafka_role_configs}
        if self.kafka_config is not None:
            env["PARTITA_KAFKA_CONFIG"] = str(self.kafka_config)
        return env

    def role_config(self, role: KafkaRole) -> Path | None:
        """The properties file of `role` (PARTITA_KAFKA_CONFIG_<ROLE>), if one is set."""
        return dict(self.kafka_role_configs).get(role)

    @property
    def native_wanted(self) -> bool | None:
        """PARTITA_NATIVE as `RecordCodec(native=...)` takes it: None for auto."""
        return {"on": True, "off": False}.get(self.native)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, kafka_config: Path | None = None
    ) -> Config:
        """Build from environment variables (the table of `partita.config.settings`); unset
        ones keep their defaults. `kafka_config` (the `--kafka-config` flag) wins over
        PARTITA_KAFKA_CONFIG; the file's `bootstrap.servers` names the cluster unless
        KAFKA_BOOTSTRAP_SERVERS is set."""
        env = os.environ if env is None else env
        names = {f.name for f in fields(cls)}
        values: dict[str, Any] = {
            setting.field: setting.read(env)
            for setting in SETTINGS
            if setting.field in names and setting.is_set(env)
        }
        values.pop("kafka_role_configs", None)
        if kafka_config is not None:
            values["kafka_config"] = kafka_config
        if values.get("kafka_config") is not None and not values.get("bootstrap_servers"):
            values["bootstrap_servers"] = read_properties(
                values["kafka_config"], s.KAFKA_CONFIG.env
            ).get("bootstrap.servers")
        values["home"] = values["home"].resolve() if values.get("home") else default_home()
        values["kafka_role_configs"] = tuple(
            (role, path)
            for role in KafkaRole
            if (path := parse_path(env.get(role.variable) or "", role.variable)) is not None
        )
        return cls(**values)
