"""The Kafka ACLs each role needs (`partita acls`), derived from what its code does.

`role_acls` is the exact list for one principal: every topic, consumer group and transactional
id the role's clients use, with the operations they perform. Families of names (job topics, the
per-partition transactional ids, faust's internal topics) are PREFIXED resources; single names
are LITERAL. Every binding is ALLOW, host `*`; nothing here ever denies. An operation Kafka
implies is not listed: Read, Write and Delete imply Describe (metadata, watermarks, committed
offsets). Write on a topic also stands in for IdempotentWrite on the cluster since Kafka 2.8,
which the idempotent producers (clients, snapshots) rely on.

Where the names come from:

- engine (`partita.stream`, `partita.snapshots`, `partita.log`): the group consumer `<ns>.engine`
  reads `<ns>.log` and `<ns>.commands` and commits both in the batch transaction of the
  partition's producer `<ns>.engine.<p>`; the batch writes the log, `<ns>.jobs.<type>` and the
  allowed reply topics; snapshots are written to and restored from `<ns>.snapshots`; DeleteRecords
  (Delete) truncates the log and drops old snapshots after reading the committed offsets of
  `<ns>.engine` and PARTITA_DOWNSTREAM_GROUPS; restore, standby and verify consumers are
  assign-only with the group id `<ns>.restore.<p>`.
- client (`partita.client.connection`): writes `<ns>.commands`, reads one partition of a reply
  topic. Python's reply consumer is assign-only and needs no group right; a reply consumer that
  joins a group (kafkajs, Spring's reply containers) names it under `<ns>.client` (Read).
- job-worker (`partita.client.worker`): `<ns>.jobs.<type>` in group `<ns>.workers.<type>`,
  exactly once with transactional id `<ns>.workers.<type>.<name>`, and a client's rights for
  its answers; it checks in the metadata that its job topics exist and creates none.
- analytics (`partita.analytics.app`, faust): group and app id `<ns>.analytics`; faust names its
  table changelogs `<ns>.analytics-<table>-changelog`, its assignor topic
  `<ns>.analytics-__assignor-__leader` and, with exactly_once, its transactional ids
  `<ns>.analytics-<group>-<p>`; the app creates its changelogs at start (Create on its prefix).
- exporter (`partita.analytics.export`): group `<ns>.export`, topics `<ns>.export.<value-type>`
  (seen in the metadata, not created: `partita topics apply --export`), transactional id
  `<ns>.export.<name>`.
- operator (`partita topics apply`, `status`, `tail`, `verify-replay`): the namespace's
  administrator. Creating ACLs (`--apply`) needs Alter on the cluster, which is the cluster
  administrator's and is in no role here.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from partita.analytics.export import export_group
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.clients import engine_group
from partita.log.topics import job_topic_spec

ADMIN_PROPERTIES = "admin.properties"
"""The `--command-config` placeholder of printed kafka-acls.sh commands: an admin's file."""


class AclError(PartitaError):
    """ACLs could not be listed or created; the message says what to check."""


class Resource(StrEnum):
    """A resource type, spelled as kafka-acls.sh's flag."""

    TOPIC = "topic"
    GROUP = "group"
    TRANSACTIONAL_ID = "transactional-id"
    CLUSTER = "cluster"


class Pattern(StrEnum):
    LITERAL = "literal"
    PREFIXED = "prefixed"


class Operation(StrEnum):
    """An ACL operation, spelled as Kafka spells it."""

    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"


@dataclass(frozen=True, slots=True)
class Acl:
    """One ALLOW binding for `principal` from any host. `why` says which code needs it and is
    not part of the binding's identity."""

    resource: Resource
    pattern: Pattern
    name: str
    operation: Operation
    principal: str
    host: str = "*"
    why: str = field(default="", compare=False)

    @property
    def target(self) -> tuple[Resource, Pattern, str]:
        return (self.resource, self.pattern, self.name)


_Rule = tuple[Resource, Pattern, str, Operation, str]
"""resource, pattern, name, operation, why"""
TOPIC, GROUP, TXN_ID = Resource.TOPIC, Resource.GROUP, Resource.TRANSACTIONAL_ID
LITERAL, PREFIXED = Pattern.LITERAL, Pattern.PREFIXED
READ, WRITE, CREATE, DELETE = Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE
DESCRIBE, DESCRIBE_CONFIGS = Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS


def role_acls(
    role: KafkaRole, config: Config, principal: str, job_types: Sequence[str] = ()
) -> list[Acl]:
    """The bindings `principal` needs to act as `role` in `config`'s namespace, in a stable
    order, without duplicates. `job_types` narrows a job worker to those types (else all of
    the namespace's); for any other role they are an error. PartitaError for a principal that
    is not `Type:Name` or a job type that cannot name a topic."""
    if not _valid_principal(principal):
        raise AclError(f"principal {principal!r} is not of the form User:NAME")
    if job_types and role is not KafkaRole.JOB_WORKER:
        raise AclError(f"--job-type narrows the job-worker role only, not {role}")
    rules = _job_worker(config, job_types) if role is KafkaRole.JOB_WORKER else _RULES[role](config)
    acls: list[Acl] = []
    for resource, pattern, name, operation, why in rules:
        acl = Acl(resource, pattern, name, operation, principal, why=why)
        if acl not in acls:
            acls.append(acl)
    return acls


def _valid_principal(principal: str) -> bool:
    kind, colon, name = principal.partition(":")
    return bool(colon and kind.isalnum() and name.strip() == name and name)


def _engine(config: Config) -> list[_Rule]:
    ns, log, snapshots = config.namespace, config.log_topic, config.snapshots_topic
    return [
        (TOPIC, LITERAL, log, READ, "replay, standbys, processing"),
        (TOPIC, LITERAL, log, WRITE, "copies of client commands, events, rejections"),
        (TOPIC, LITERAL, log, DELETE, "truncation after snapshots (DeleteRecords)"),
        (TOPIC, LITERAL, config.commands_topic, READ, "client commands, offsets in the batch"),
        (TOPIC, LITERAL, snapshots, READ, "restoring a snapshot"),
        (TOPIC, LITERAL, snapshots, WRITE, "uploading snapshots"),
        (TOPIC, LITERAL, snapshots, DELETE, "dropping old snapshots (DeleteRecords)"),
        (TOPIC, PREFIXED, config.job_topic(""), WRITE, "pushing activated jobs"),
        *(
            (TOPIC, LITERAL, topic, WRITE, "replies (an allowed reply topic)")
            for topic in sorted(config.allowed_reply_topics)
        ),
        (GROUP, LITERAL, engine_group(ns), READ, "partition ownership, committed offsets"),
        (GROUP, PREFIXED, f"{ns}.restore.", DESCRIBE, "group id of restore/standby consumers"),
        (GROUP, PREFIXED, f"{ns}.workers.", DESCRIBE, "job push: do the type's workers run?"),
        *(
            (GROUP, LITERAL, group, DESCRIBE, "truncation waits for it (downstream group)")
            for group in config.downstream_groups
        ),
        # partita.log.clients.transactional_id: <ns>.engine.<partition>
        (TXN_ID, PREFIXED, f"{engine_group(ns)}.", WRITE, "a producer per partition, fencing"),
    ]


def _client_side(config: Config, reply_topics: Sequence[str]) -> list[_Rule]:
    """What a client of the engine needs: commands in, replies out."""
    return [
        (TOPIC, LITERAL, config.commands_topic, WRITE, "commands to the engine"),
        *((TOPIC, LITERAL, topic, READ, "replies to its commands") for topic in reply_topics),
        # Python's reply consumer is assign-only; kafkajs and Spring containers join a group
        (GROUP, PREFIXED, f"{config.namespace}.client", READ, "reply consumers that join a group"),
    ]


def _client(config: Config) -> list[_Rule]:
    return _client_side(config, sorted(config.allowed_reply_topics))


def _job_worker(config: Config, job_types: Sequence[str]) -> list[_Rule]:
    ns = config.namespace
    families = [
        (LITERAL, job_topic_spec(config, t).name, f"{ns}.workers.{t}", f"{ns}.workers.{t}.")
        for t in job_types
    ] or [(PREFIXED, config.job_topic(""), f"{ns}.workers.", f"{ns}.workers.")]
    rules: list[_Rule] = []
    for pattern, topic, group, transactional_ids in families:
        rules += [
            (TOPIC, pattern, topic, READ, "pushed jobs"),
            (GROUP, pattern, group, READ, "the job type's consumer group"),
            (TXN_ID, PREFIXED, transactional_ids, WRITE, "exactly once: answers with offsets"),
        ]
    return rules + _client_side(config, [config.replies_topic])


def _analytics(config: Config) -> list[_Rule]:
    group = f"{config.namespace}.analytics"  # the faust app's id (partita.analytics.app)
    faust = f"{group}-"  # faust names its changelogs, assignor topic, transactional ids so
    return [
        (TOPIC, LITERAL, config.log_topic, READ, "the events it folds"),
        (TOPIC, PREFIXED, faust, READ, "restoring faust's tables; its assignor topic"),
        (TOPIC, PREFIXED, faust, WRITE, "faust's table changelogs"),
        (TOPIC, PREFIXED, faust, CREATE, "the changelogs and assignor topic, made at start"),
        (GROUP, LITERAL, group, READ, "the faust app's consumer group"),
        (TXN_ID, PREFIXED, faust, WRITE, "faust exactly_once: a producer per partition"),
    ]


def _exporter(config: Config) -> list[_Rule]:
    group = export_group(config.namespace)
    return [
        (TOPIC, LITERAL, config.log_topic, READ, "the events it exports"),
        (TOPIC, PREFIXED, f"{group}.", WRITE, "the JSON export topics"),
        (GROUP, LITERAL, group, READ, "the exporter's consumer group"),
        (TXN_ID, PREFIXED, f"{group}.", WRITE, "records with consumed offsets"),
    ]


def _operator(config: Config) -> list[_Rule]:
    prefix = f"{config.namespace}."
    return [
        (TOPIC, PREFIXED, prefix, CREATE, "partita topics apply"),
        (TOPIC, PREFIXED, prefix, DESCRIBE_CONFIGS, "topics apply checks existing topics"),
        (TOPIC, PREFIXED, prefix, READ, "tail, status, verify-replay"),
        (GROUP, PREFIXED, prefix, DESCRIBE, "status; group ids of tail, status, verify"),
        *(
            (GROUP, LITERAL, group, DESCRIBE, "status shows its lag")
            for group in config.downstream_groups
            if not group.startswith(prefix)
        ),
    ]


def _gateway(config: Config) -> list[_Rule]:
    return [
        *_client_side(config, [config.replies_topic]),
        (TOPIC, LITERAL, config.log_topic, READ, "job records that wake long polls"),
        (GROUP, LITERAL, engine_group(config.namespace), DESCRIBE, "topology: owners, lag"),
    ]


_RULES: dict[KafkaRole, Callable[[Config], list[_Rule]]] = {
    KafkaRole.ENGINE: _engine,
    KafkaRole.CLIENT: _client,
    KafkaRole.ANALYTICS: _analytics,
    KafkaRole.EXPORTER: _exporter,
    KafkaRole.OPERATOR: _operator,
    KafkaRole.GATEWAY: _gateway,
}


# -- rendering ----------------------------------------------------------------------------------

_COLUMNS = ("resource", "pattern", "name", "operation", "why")


def _rows(acls: Sequence[Acl]) -> list[tuple[str, ...]]:
    return [(a.resource, a.pattern, a.name, a.operation, a.why) for a in acls]


def render_table(acls: Sequence[Acl]) -> str:
    """A plain-text table, one binding a line."""
    rows = [_COLUMNS, *_rows(acls)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )


def render_markdown(acls: Sequence[Acl]) -> str:
    """A Markdown table, one binding a row."""
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    for resource, pattern, name, operation, why in _rows(acls):
        lines.append(f"| {resource} | {pattern} | `{name}` | {operation} | {why} |")
    return "\n".join(lines)


def kafka_acls_commands(
    acls: Sequence[Acl], bootstrap: str, command_config: str = ADMIN_PROPERTIES
) -> list[str]:
    """`kafka-acls.sh --add` commands creating exactly `acls`: one per principal and resource,
    with all its operations. `bootstrap` and `command_config` are inserted as given (a shell
    variable such as `$BOOTSTRAP` stays one)."""
    grouped: dict[tuple[str, Resource, Pattern, str, str], list[Operation]] = {}
    for acl in acls:
        grouped.setdefault((acl.principal, *acl.target, acl.host), []).append(acl.operation)
    commands = []
    for (principal, resource, pattern, name, host), operations in grouped.items():
        words = [
            "kafka-acls.sh",
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            command_config,
            "--add",
            "--allow-principal",
            shlex.quote(principal),
            "--allow-host",
            shlex.quote(host),
        ]
        for operation in operations:
            words += ["--operation", str(operation)]
        words.append(f"--{resource}")
        if resource is not Resource.CLUSTER:
            words.append(shlex.quote(name))
        words += ["--resource-pattern-type", str(pattern)]
        commands.append(" ".join(words))
    return commands


# -- docs/security.md ---------------------------------------------------------------------------

DOCS_BEGIN = (
    "<!-- generated from engine/partita/ops/acls.py by"
    " `python -m partita.ops.acls docs/security.md`; edit the code, not this section -->"
)
DOCS_END = "<!-- end of the generated section -->"

DOCS_CONFIG = Config(downstream_groups=("partita.analytics", "partita.export"))
"""The example of the docs: namespace `partita`, analytics and exporter holding truncation."""

_DOCS_EXAMPLES: tuple[tuple[KafkaRole, tuple[str, ...]], ...] = (
    *((role, ()) for role in KafkaRole),
    (KafkaRole.JOB_WORKER, ("charge-card",)),
)


def docs_section(config: Config = DOCS_CONFIG) -> str:
    """The generated part of docs/security.md: every role's ACLs as a table and as commands."""
    parts = []
    for role, job_types in _DOCS_EXAMPLES:
        principal = f"User:{role}"
        acls = role_acls(role, config, principal, job_types)
        flags = "".join(f" --job-type {t}" for t in job_types)
        title = f"### {role}{flags}"
        parts += [
            title,
            f"`partita acls --role {role} --principal {principal}{flags}`: {len(acls)} ACLs.",
            render_markdown(acls),
            "```sh\n" + "\n".join(kafka_acls_commands(acls, "$BOOTSTRAP")) + "\n```",
        ]
    return "\n\n".join(parts)


def update_docs(text: str, config: Config = DOCS_CONFIG) -> str:
    """`text` (docs/security.md) with the generated section between its markers replaced."""
    head, begin, rest = text.partition(DOCS_BEGIN)
    _, end, tail = rest.partition(DOCS_END)
    if not begin or not end:
        raise AclError(f"docs/security.md lacks the markers {DOCS_BEGIN!r} and {DOCS_END!r}")
    return f"{head}{DOCS_BEGIN}\n\n{docs_section(config)}\n\n{DOCS_END}{tail}"


if __name__ == "__main__":
    import sys
    from pathlib import Path

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/security.md")
    path.write_text(update_docs(path.read_text()))
