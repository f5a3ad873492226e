"""The one typed configuration object, built from environment variables and CLI flags.

Every setting has a default that works on a laptop; CLI flags override the environment.

- `KAFKA_BOOTSTRAP_SERVERS` (or `PARTITA_BOOTSTRAP_SERVERS`, which wins): an existing cluster.
  When set, no local broker is ever started.
- `PARTITA_NAMESPACE` (`partita`): prefix of every topic (`<ns>.log`, ...), so several engines
  can share one cluster.
- `PARTITA_PARTITIONS` (`3`): partitions of the log topic.
- `PARTITA_REPLICATION_FACTOR` (`-1`, the cluster's default): replication of created topics.
- `PARTITA_HOME` (`<checkout>/.partita`, else `~/.local/share/partita`): cached Kafka jars, the
  local broker's data, state stores.
- `PARTITA_KAFKA_PORT` (`9092`) and `PARTITA_CONTROLLER_PORT` (`9093`): the local broker's client
  and KRaft controller ports on 127.0.0.1.
- `PARTITA_JOB_PUSH_LIMIT` (`256`): pushed, unfinished jobs per job type and partition (the
  flow control of jobs pushed to `<ns>.jobs.<type>`).
- `PARTITA_JOB_PUSH_TIMEOUT_MS` (`300000`): the deadline given to a pushed job.
- `PARTITA_MESSAGE_TTL` (`PT5M`): the time to live of a published message that names none
  (an ISO-8601 duration, or milliseconds).
- `PARTITA_SNAPSHOT_RECORDS` (`100000`) and `PARTITA_SNAPSHOT_INTERVAL` (`PT5M`): a partition
  snapshots its state after that many log records or that much time, whichever comes first.
- `PARTITA_DOWNSTREAM_GROUPS` (empty): comma-separated consumer groups that read the log (e.g.
  analytics); the log is never truncated past what they have committed.
- `PARTITA_TRUNCATE` (`true`): delete log records no one needs after each snapshot.
- `PARTITA_STANDBY` (`false`): keep warm copies of the partitions a worker does not own, so
  taking one over replays only the last few records.
- `PARTITA_BACKPRESSURE_LAG` (`10000`, 0 disables): client commands waiting on a partition of
  `<ns>.commands` above which new instances and messages are rejected `RESOURCE_EXHAUSTED`.
- `PARTITA_OFFSETS_COMMIT_MS` (`100`): how often a partition's transactions send the consumed
  offsets to the engine group; in between, each batch's positions ride on its last record.
- `PARTITA_REPLY_TOPICS` (`<ns>.replies`): comma-separated topics the engine may answer to
  (`kafka_replyTopic`); a request naming any other topic gets no reply (the drop is counted).
  The log, ingress, snapshot and job topics of any namespace are never allowed.
- `PARTITA_KAFKA_CONFIG` (none): a Kafka client properties file (the format of Kafka's own
  `client.properties`: `security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
  `ssl.truststore.location`, ...) merged into every Kafka client Partita creates. Its
  `bootstrap.servers` is the cluster when `KAFKA_BOOTSTRAP_SERVERS` is not set.
- `PARTITA_KAFKA_CONFIG_<ROLE>` (none), ROLE one of ENGINE, CLIENT, JOB_WORKER, ANALYTICS,
  EXPORTER, OPERATOR: a properties file merged over `PARTITA_KAFKA_CONFIG` for the clients of that
  role only, so each part can run under its own principal (see docs/security.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from partita.errors import ConfigError
from partita.log.properties import read_properties

DEFAULT_NAMESPACE = "partita"
DEFAULT_PARTITIONS = 3
DEFAULT_KAFKA_PORT = 9092
DEFAULT_CONTROLLER_PORT = 9093


class KafkaRole(StrEnum):
    """What a Kafka client does for Partita, and so which principal and ACLs it needs."""

    ENGINE = "engine"
    CLIENT = "client"
    JOB_WORKER = "job-worker"
    ANALYTICS = "analytics"
    EXPORTER = "exporter"
    OPERATOR = "operator"

    @property
    def variable(self) -> str:
        """The environment variable naming this role's own properties file."""
        return f"PARTITA_KAFKA_CONFIG_{self.name}"


_NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")


def duration_ms(text: str, what: str) -> int:
    """Milliseconds from an ISO-8601 duration (`PT5M`) or a plain number of milliseconds."""
    from partita.bpmn.schedule import ScheduleError, after  # lazy: partita.bpmn costs 65 ms

    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        return after(text, 0)
    except ScheduleError as error:
        raise ConfigError(f"{what}: {error}") from None


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

    bootstrap_servers: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    partitions: int = DEFAULT_PARTITIONS
    replication_factor: int = -1
    home: Path = Path(".partita")
    kafka_port: int = DEFAULT_KAFKA_PORT
    controller_port: int = DEFAULT_CONTROLLER_PORT
    job_push_limit: int = 256
    job_push_timeout_ms: int = 300_000
    message_ttl_ms: int = 300_000
    snapshot_every_records: int = 100_000
    snapshot_interval_ms: int = 300_000
    downstream_groups: tuple[str, ...] = ()
    truncate: bool = True
    standby: bool = False
    backpressure_lag: int = 10_000
    offsets_commit_ms: int = 100
    reply_topics: tuple[str, ...] = ()
    """Extra topics replies may go to, besides `<ns>.replies` (see `allowed_reply_topics`)."""
    kafka_config: Path | None = None
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

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, kafka_config: Path | None = None
    ) -> Config:
        """Build from environment variables (see the module docs); unset ones keep defaults.
        `kafka_config` (the `--kafka-config` flag) wins over PARTITA_KAFKA_CONFIG; the file's
        `bootstrap.servers` names the cluster unless KAFKA_BOOTSTRAP_SERVERS is set."""
        env = os.environ if env is None else env
        bootstrap = env.get("PARTITA_BOOTSTRAP_SERVERS") or env.get("KAFKA_BOOTSTRAP_SERVERS")
        if kafka_config is None and env.get("PARTITA_KAFKA_CONFIG"):
            kafka_config = Path(env["PARTITA_KAFKA_CONFIG"]).expanduser()
        if kafka_config is not None and not bootstrap:
            bootstrap = read_properties(kafka_config, "PARTITA_KAFKA_CONFIG").get(
                "bootstrap.servers"
            )
        home = env.get("PARTITA_HOME")
        return cls(
            kafka_config=kafka_config,
            kafka_role_configs=tuple(
                (role, Path(env[role.variable]).expanduser())
                for role in KafkaRole
                if env.get(role.variable)
            ),
            bootstrap_servers=bootstrap or None,
            namespace=env.get("PARTITA_NAMESPACE") or DEFAULT_NAMESPACE,
            partitions=_int(env, "PARTITA_PARTITIONS", DEFAULT_PARTITIONS),
            replication_factor=_int(env, "PARTITA_REPLICATION_FACTOR", -1),
            home=Path(home).expanduser().resolve() if home else default_home(),
            kafka_port=_int(env, "PARTITA_KAFKA_PORT", DEFAULT_KAFKA_PORT),
            controller_port=_int(env, "PARTITA_CONTROLLER_PORT", DEFAULT_CONTROLLER_PORT),
            job_push_limit=_int(env, "PARTITA_JOB_PUSH_LIMIT", 256),
            job_push_timeout_ms=_int(env, "PARTITA_JOB_PUSH_TIMEOUT_MS", 300_000),
            backpressure_lag=_int(env, "PARTITA_BACKPRESSURE_LAG", 10_000),
            offsets_commit_ms=_int(env, "PARTITA_OFFSETS_COMMIT_MS", 100),
            message_ttl_ms=duration_ms(
                env.get("PARTITA_MESSAGE_TTL") or "PT5M", "PARTITA_MESSAGE_TTL"
            ),
            snapshot_every_records=_int(env, "PARTITA_SNAPSHOT_RECORDS", 100_000),
            snapshot_interval_ms=duration_ms(
                env.get("PARTITA_SNAPSHOT_INTERVAL") or "PT5M", "PARTITA_SNAPSHOT_INTERVAL"
            ),
            downstream_groups=tuple(
                g.strip()
                for g in (env.get("PARTITA_DOWNSTREAM_GROUPS") or "").split(",")
                if g.strip()
            ),
            reply_topics=tuple(
                t.strip() for t in (env.get("PARTITA_REPLY_TOPICS") or "").split(",") if t.strip()
            ),
            standby=(env.get("PARTITA_STANDBY") or "false").strip().lower() in ("true", "1", "yes"),
            truncate=(env.get("PARTITA_TRUNCATE") or "true").strip().lower()
            not in ("false", "0", "no"),
        )


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
