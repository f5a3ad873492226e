"""Every setting of Partita, declared once: its environment variable, type, default, help, flag
and the commands that read it.

`Config` (its field defaults and `Config.from_env`), the CLI flags' help and
docs/configuration.md (`python -m partita.config.docs docs/configuration.md`) are built from
`SETTINGS`; a test fails when the page is stale. No other module reads a `PARTITA_*` variable:
what is not a `Config` field (the codec choice read by every command, the supervisor's pid) is
read through `Setting.read`.

One parser per type (`partita.config.parsers`): a boolean takes true/false, 1/0 or yes/no in any
case and refuses anything else; every refusal names the variable and the value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from partita.config.parsers import (
    Parse,
    parse_bool,
    parse_choice,
    parse_duration,
    parse_int,
    parse_list,
    parse_optional_str,
    parse_path,
    parse_positions,
    parse_str,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Setting(Generic[T]):
    """One setting. `default` is `parse(default_text)` unless given (None: unset)."""

    env: str
    parse: Parse[T]
    default_text: str
    help: str
    section: str
    field: str | None = None
    """The `Config` field it fills; None when it is read where it is used (`read`)."""
    flag: str | None = None
    readers: str = "every command"
    overridden_by: str | None = None
    """A second variable that wins over this one when both are set."""
    shown_default: str | None = None
    """How the docs show the default when `default_text` is not what a user sees."""
    parsed_default: T | None = None
    """`parse(default_text)` written out where parsing costs an import at start (durations);
    a test checks the two agree."""

    @property
    def default(self) -> T:
        if self.parsed_default is not None:
            return self.parsed_default
        return self.parse(self.default_text, self.env)

    def read(self, env: Mapping[str, str] | None = None) -> T:
        """The value in `env` (the process's environment when None); the default when unset
        or empty. ConfigError naming the variable when the value does not parse."""
        env = os.environ if env is None else env
        text = (env.get(self.overridden_by) if self.overridden_by else None) or env.get(self.env)
        return self.parse(text, self.env) if text and text.strip() else self.default

    def is_set(self, env: Mapping[str, str]) -> bool:
        return bool((env.get(self.env) or "").strip()) or bool(
            self.overridden_by and (env.get(self.overridden_by) or "").strip()
        )

    def flag_help(self, text: str) -> str:
        """`text` for a flag's --help, naming this variable and its default."""
        shown = self.shown_default or self.default_text or "unset"
        return f"{text} ({self.env}, default: {shown})"


CLUSTER = "Cluster and topics"
SECURITY = "Secured clusters"
LOCAL = "Local broker (development)"
WORKER = "Engine workers (`partita worker`)"
ANALYTICS = "Analytics (`partita analytics`)"

BOOTSTRAP_SERVERS = Setting(
    "KAFKA_BOOTSTRAP_SERVERS",
    parse_optional_str,
    "",
    "an existing Kafka cluster; when set, nothing is started locally."
    " `PARTITA_BOOTSTRAP_SERVERS` wins over it",
    CLUSTER,
    field="bootstrap_servers",
    flag="--bootstrap-servers",
    overridden_by="PARTITA_BOOTSTRAP_SERVERS",
    shown_default="unset: the local broker",
)
NAMESPACE = Setting(
    "PARTITA_NAMESPACE",
    parse_str,
    "partita",
    "prefix of every topic and consumer group, so several engines can share a cluster",
    CLUSTER,
    field="namespace",
    flag="--namespace",
)
PARTITIONS = Setting(
    "PARTITA_PARTITIONS",
    parse_int,
    "3",
    "partitions of `<ns>.log`, and of the ingress topic `<ns>.commands` (the two must match),"
    " when `topics apply` creates them (see [operations.md](operations.md) before changing it"
    " later)",
    CLUSTER,
    field="partitions",
    flag="--partitions",
    readers="topics apply, up, demo, analytics",
)
REPLICATION_FACTOR = Setting(
    "PARTITA_REPLICATION_FACTOR",
    parse_int,
    "-1",
    "replication factor of the topics Partita creates",
    CLUSTER,
    field="replication_factor",
    readers="topics apply, up, analytics",
    shown_default="-1 (the cluster's default)",
)
KAFKA_CONFIG = Setting(
    "PARTITA_KAFKA_CONFIG",
    parse_path,
    "",
    "a Kafka client properties file (Kafka's own `client.properties` format:"
    " `security.protocol`, `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.location`,"
    " ...) merged into every Kafka client Partita creates; its `bootstrap.servers` names the"
    " cluster unless `KAFKA_BOOTSTRAP_SERVERS` is set ([security.md](security.md))",
    SECURITY,
    field="kafka_config",
    flag="--kafka-config",
    shown_default="unset: plaintext",
)
KAFKA_ROLE_CONFIG = Setting(
    "PARTITA_KAFKA_CONFIG_<ROLE>",
    parse_path,
    "",
    "a properties file merged over the first for one role's clients (`ENGINE`, `CLIENT`,"
    " `JOB_WORKER`, `ANALYTICS`, `EXPORTER`, `OPERATOR`, `GATEWAY`), so that part runs under"
    " its own principal; it may change credentials, not the cluster",
    SECURITY,
    field="kafka_role_configs",
    readers="the commands of that role",
)
HOME = Setting(
    "PARTITA_HOME",
    parse_path,
    "",
    "Kafka jars, the local broker's data, partition state stores, analytics tables",
    LOCAL,
    field="home",
    flag="--home",
    shown_default="`.partita` in a checkout, else `~/.local/share/partita`",
)
KAFKA_PORT = Setting(
    "PARTITA_KAFKA_PORT",
    parse_int,
    "9092",
    "the local broker's client port on 127.0.0.1",
    LOCAL,
    field="kafka_port",
    flag="--port",
    readers="kafka up, up, and every command when no cluster is set",
)
CONTROLLER_PORT = Setting(
    "PARTITA_CONTROLLER_PORT",
    parse_int,
    "9093",
    "its KRaft controller port",
    LOCAL,
    field="controller_port",
    flag="--controller-port",
    readers="kafka up, up",
)
NATIVE = Setting(
    "PARTITA_NATIVE",
    parse_choice("auto", "on", "off"),
    "auto",
    "the record codec (Avro encoder and decoder): `auto` uses the compiled one (`native/`,"
    " Rust, built by `scripts/setup` when `cargo` is there) if it is installed, else the"
    " pure-Python one; `on` requires it and fails at start saying how to build it; `off` never"
    " uses it. Both read and write every record the same (tests/fuzz/test_native_codec_parity.py);"
    " the compiled one decodes about 6x and encodes about 3x faster (`partita bench codec`)."
    " The worker logs which one it runs. The Docker image runs the pure-Python codec",
    WORKER,
    field="native",
)
JOB_PUSH_LIMIT = Setting(
    "PARTITA_JOB_PUSH_LIMIT",
    parse_int,
    "256",
    "pushed, unfinished jobs per job type and partition: the flow control of push",
    WORKER,
    field="job_push_limit",
    readers="worker",
)
JOB_PUSH_TIMEOUT_MS = Setting(
    "PARTITA_JOB_PUSH_TIMEOUT_MS",
    parse_int,
    "300000",
    "the deadline of a pushed job; after it the job is pushed again",
    WORKER,
    field="job_push_timeout_ms",
    readers="worker",
)
MESSAGE_TTL = Setting(
    "PARTITA_MESSAGE_TTL",
    parse_duration,
    "PT5M",
    "time to live of a published message that names none (ISO-8601 or ms)",
    WORKER,
    field="message_ttl_ms",
    readers="worker",
    parsed_default=300_000,
)
SNAPSHOT_RECORDS = Setting(
    "PARTITA_SNAPSHOT_RECORDS",
    parse_int,
    "100000",
    "snapshot a partition after this many log records ...",
    WORKER,
    field="snapshot_every_records",
    readers="worker",
)
SNAPSHOT_INTERVAL = Setting(
    "PARTITA_SNAPSHOT_INTERVAL",
    parse_duration,
    "PT5M",
    "... or after this long, whichever comes first (ISO-8601 or ms)",
    WORKER,
    field="snapshot_interval_ms",
    readers="worker",
    parsed_default=300_000,
)
TRUNCATE = Setting(
    "PARTITA_TRUNCATE",
    parse_bool,
    "true",
    "delete log records no one needs after each snapshot",
    WORKER,
    field="truncate",
    readers="worker",
)
DOWNSTREAM_GROUPS = Setting(
    "PARTITA_DOWNSTREAM_GROUPS",
    parse_list,
    "",
    "comma-separated consumer groups that read the log (e.g."
    " `partita.analytics,partita.export`); truncation never deletes what they have not"
    " committed. A listed group with no commit yet holds everything back",
    WORKER,
    field="downstream_groups",
    readers="worker, analytics, export",
    shown_default="empty",
)
STANDBY = Setting(
    "PARTITA_STANDBY",
    parse_bool,
    "false",
    "keep warm copies of the partitions this worker does not own, for fast takeover",
    WORKER,
    field="standby",
    readers="worker",
)
OFFSETS_COMMIT_MS = Setting(
    "PARTITA_OFFSETS_COMMIT_MS",
    parse_int,
    "100",
    "how often a partition's transactions also send the consumed offsets to the engine group"
    " (`0`: every transaction); in between, each batch's processed positions ride on its last"
    " record on the log (`partitaProcessed`), where a new owner finds them"
    " ([operations.md](operations.md#where-processing-resumes))",
    WORKER,
    field="offsets_commit_ms",
    readers="worker",
)
BACKPRESSURE_LAG = Setting(
    "PARTITA_BACKPRESSURE_LAG",
    parse_int,
    "10000",
    "client commands waiting on a partition of `<ns>.commands` above which that partition"
    " rejects new instances and messages `RESOURCE_EXHAUSTED`; `0` turns backpressure off"
    " ([limits.md](limits.md#backpressure))",
    WORKER,
    field="backpressure_lag",
    readers="worker",
)
SKIP_RECORDS = Setting(
    "PARTITA_SKIP_RECORDS",
    parse_positions,
    "",
    "`partition:offset,...` log records every replay, standby, `verify-replay` and processing"
    " leaves out: the way past a record the engine cannot apply"
    " ([operations.md](operations.md#a-record-the-engine-cannot-apply)); set it on every"
    " process of the namespace",
    WORKER,
    field="skip_records",
    readers="worker, verify-replay",
    shown_default="empty",
)
REPLY_TOPICS = Setting(
    "PARTITA_REPLY_TOPICS",
    parse_list,
    "",
    "comma-separated topics replies may go to (`kafka_replyTopic`) besides `<ns>.replies`, e.g."
    " an application's own reply topic for Spring's `ReplyingKafkaTemplate`. A reply to a"
    " topic not listed, not existing, or to a partition past its count is dropped, counted and"
    " logged, and the request times out. Log, ingress, snapshot and job topics of any"
    " namespace (`*.log`, `*.commands`, `*.snapshots`, `*.jobs.*`) are never allowed: the"
    " worker refuses to start when the list names one"
    " ([producing.md](producing.md#replies-requestresponse))",
    WORKER,
    field="reply_topics",
    readers="worker",
    shown_default="empty (only `<ns>.replies`)",
)
ANALYTICS_HOST = Setting(
    "PARTITA_ANALYTICS_HOST",
    parse_str,
    "127.0.0.1",
    "the interface the analytics page listens on",
    ANALYTICS,
    flag="--bind",
    readers="analytics",
)
ANALYTICS_TOKEN = Setting(
    "PARTITA_ANALYTICS_TOKEN",
    parse_optional_str,
    "",
    "when set, every page and JSON endpoint of the analytics answers 401 without"
    " `Authorization: Bearer <token>` (or `?token=`); at least 16 characters",
    ANALYTICS,
    flag="--token",
    readers="analytics, instances, incidents",
    shown_default="unset: no token",
)
from partita.config.settings_gateway import GATEWAY_SETTINGS  # noqa: E402 (needs Setting)

SUPERVISOR_PID = Setting(
    "PARTITA_SUPERVISOR_PID",
    parse_int,
    "0",
    "set by `partita worker --processes N` in each child's environment: the pid whose death"
    " stops the child. Not for users",
    WORKER,
    readers="worker (a supervised child)",
    shown_default="unset",
)

SETTINGS: tuple[Setting[Any], ...] = (
    BOOTSTRAP_SERVERS,
    NAMESPACE,
    PARTITIONS,
    REPLICATION_FACTOR,
    KAFKA_CONFIG,
    KAFKA_ROLE_CONFIG,
    HOME,
    KAFKA_PORT,
    CONTROLLER_PORT,
    NATIVE,
    JOB_PUSH_LIMIT,
    JOB_PUSH_TIMEOUT_MS,
    MESSAGE_TTL,
    SNAPSHOT_RECORDS,
    SNAPSHOT_INTERVAL,
    TRUNCATE,
    DOWNSTREAM_GROUPS,
    STANDBY,
    OFFSETS_COMMIT_MS,
    BACKPRESSURE_LAG,
    SKIP_RECORDS,
    REPLY_TOPICS,
    ANALYTICS_HOST,
    ANALYTICS_TOKEN,
    *GATEWAY_SETTINGS,
    SUPERVISOR_PID,
)
"""Every setting, in the order docs/configuration.md shows them."""
