"""`partita tail`, `partita status`, `partita export` and `partita acls`: commands for operators."""

from __future__ import annotations

import argparse
import json
import signal
import threading
from enum import Enum

from partita.cli.common import Subcommands, add_command, build_config, progress
from partita.config import KafkaRole
from partita.errors import PartitaError
from partita.log.security import kafka_access


def _stop_on_signals() -> threading.Event:
    """An event set by Ctrl-C or SIGTERM, so a loop finishes its batch and returns."""
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    return stopping


def _names(values: list[str] | None, enum: type[Enum], what: str) -> list[str]:
    names = [v.upper().replace("-", "_") for v in values or []]
    unknown = [n for n in names if n not in enum.__members__]
    if unknown:
        raise PartitaError(
            f"unknown {what} {', '.join(unknown)}; known: {', '.join(enum.__members__)}"
        )
    return names


def cmd_tail(args: argparse.Namespace) -> int:
    from partita.ops.tail import TailFilter, tail
    from partita.protocol.enums import RecordType, ValueType

    where = TailFilter(
        partitions=args.partition or (),
        record_types=_names(args.record_type, RecordType, "record type"),
        value_types=_names(args.value_type, ValueType, "value type"),
        intents=[i.upper() for i in args.intent or []],
        key=args.key,
    )
    stopping = _stop_on_signals()
    tail(
        build_config(args),
        where,
        last=args.last,
        from_beginning=args.from_beginning,
        follow=not args.no_follow,
        out=lambda line: print(line, flush=True),
        stop=stopping.is_set,
    )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from partita.ops.status import collect, render

    status = collect(build_config(args))
    print(json.dumps(status.to_json()) if args.json else render(status))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from partita.analytics.export import Exporter, export_group
    from partita.protocol.enums import ValueType

    config = build_config(args)
    value_types = [ValueType[n] for n in _names(args.value_type, ValueType, "value type")]
    exporter = Exporter(
        config,
        value_types=value_types,
        name=args.name,
        skip_truncated=args.skip_truncated,
        progress=progress,
    )
    group = export_group(config.namespace)
    if group not in config.downstream_groups:
        progress(
            f"note: {group} is not in PARTITA_DOWNSTREAM_GROUPS here; the engine workers need it"
            " there, or log truncation may delete records before they are exported"
        )
    what = "until the log's current end" if args.once else "until Ctrl-C"
    progress(f"Exporting {config.log_topic} events as JSON to {config.namespace}.export.* {what}")
    stopping = _stop_on_signals()
    stats = exporter.run(once=args.once, stop=stopping.is_set)
    by_type = ", ".join(f"{n} {t}" for t, n in sorted(stats.by_value_type.items())) or "none"
    print(
        f"exported {stats.exported} events ({by_type}) in {stats.transactions} transactions;"
        f" {stats.read} log records read"
    )
    return 0


def cmd_chaos(args: argparse.Namespace) -> int:
    from partita.ops.chaos import ChaosSettings, passed, run

    def terminate(*_: object) -> None:
        raise SystemExit(143)  # unwinds the run, which stops its processes and broker

    signal.signal(signal.SIGTERM, terminate)
    settings = ChaosSettings(
        duration=args.duration,
        rate=args.rate,
        fault_every=args.fault_every,
        min_faults=args.min_faults,
        seed=args.seed,
        hostile_rate=args.hostile_rate,
        snapshot_records=args.snapshot_records,
        truncate=not args.no_truncate,
    )
    result = run(settings, progress, keep=args.keep)
    print(json.dumps({"chaos": True, **result}))
    return 0 if passed(result) else 1


def cmd_acls(args: argparse.Namespace) -> int:
    from partita.ops.acls import kafka_acls_commands, render_table, role_acls

    config = build_config(args)
    role = KafkaRole(args.role)
    acls = role_acls(role, config, args.principal, args.job_types or ())
    if args.apply:
        from partita.log.admin import admin_client, wait_for_metadata
        from partita.ops.acls_apply import apply_acls

        access = kafka_access(config, KafkaRole.OPERATOR)
        wait_for_metadata(access, timeout=15.0)
        outcomes = apply_acls(admin_client(access), acls)
        for acl, created in outcomes:
            print(
                f"{'created' if created else 'exists':8} {acl.resource} {acl.pattern}"
                f" {acl.name} {acl.operation} for {acl.principal}"
            )
        made = sum(created for _, created in outcomes)
        print(f"{made} ACLs created, {len(outcomes) - made} already there ({role} role)")
        return 0
    if args.format == "kafka-acls":
        print(f"# partita acls --role {role}: {len(acls)} ACLs for {args.principal}")
        print("\n".join(kafka_acls_commands(acls, config.bootstrap)))
        return 0
    print(
        f"{len(acls)} ACLs for {args.principal} as {role} in namespace {config.namespace}"
        " (all ALLOW, from any host):\n"
    )
    print(render_table(acls))
    return 0


TAIL_EXAMPLES = """examples:
  partita tail                                   the last 10 records of each partition, then follow
  partita tail --value-type job --intent completed
  partita tail --key 2251799813685249 --from-beginning --no-follow   one instance's whole story
  partita tail --record-type command_rejection   only rejections, with their reasons
"""

STATUS_EXAMPLES = """examples:
  partita status                       partitions, owners, lag, snapshots as tables
  partita status --json | jq .groups   the same as one JSON document
"""

EXPORT_EXAMPLES = """examples:
  partita export                         run until Ctrl-C, resuming where the last run stopped
  partita export --once                  export up to the log's current end, then exit
  partita export --value-type process-instance --value-type incident

Records go to <ns>.export.<value-type> (e.g. partita.export.process-instance) as JSON, keyed by
process instance key, exactly once: read them with isolation.level=read_committed. List
<ns>.export in the engine workers' PARTITA_DOWNSTREAM_GROUPS so truncation waits for it.
"""

ACLS_EXAMPLES = """examples:
  partita acls --role engine --principal User:engine        the engine's ACLs as a table
  partita acls --role job-worker --principal User:billing --job-type charge-card
  partita acls --role client --principal User:shop --format kafka-acls > client-acls.sh
  PARTITA_KAFKA_CONFIG_OPERATOR=admin.properties \\
    partita acls --role engine --principal User:engine --apply

Run it with the environment of the part it is for: the engine's ACLs include the reply topics
(PARTITA_REPLY_TOPICS) and the downstream groups (PARTITA_DOWNSTREAM_GROUPS) set there. Families
of names (job topics, per-partition transactional ids) are prefixed ACLs. --apply creates what is
missing through the admin API as the operator role's principal, which must be allowed to manage
ACLs (Alter on the cluster: a cluster administrator); kafka-acls commands read admin.properties,
an administrator's client properties. See docs/security.md.
"""

CHAOS_EXAMPLES = """examples:
  partita chaos                                   60 s at 20 instances/s, a fault every 5 s
  partita chaos --duration 1800 --fault-every 10  the long run
  partita chaos --hostile-rate 5                  5 hostile records/s to <ns>.commands
  partita chaos --hostile-rate 0 --no-truncate    no hostile producer, the whole log kept
  partita chaos --snapshot-records 200            snapshot and truncate every 200 records
  partita chaos --duration 45 --min-faults 8      at least 8 faults, however slow the machine

Starts its own broker on free ports (nothing else is touched). Clients write to <ns>.commands;
meanwhile a hostile producer writes garbage, forged EVENT and COMMAND_REJECTION records,
internal intents, keys of missing partitions and bad reply headers there. Workers snapshot and
truncate the log as in production. Exit code 0 when no instance was lost or duplicated, no
aborted record is visible, every hostile record got exactly one rejection and nothing else,
no reply reached the log or another namespace, and every partition replays to the live digest.
"""


def register(commands: Subcommands) -> None:
    """Add the operator commands: tail, status, export, acls and chaos."""
    tail = add_command(
        commands,
        "tail",
        cmd_tail,
        "a readable live view of the log",
        examples=TAIL_EXAMPLES,
        local=True,
    )
    tail.add_argument(
        "--partition", type=int, action="append", metavar="N", help="only partition N (repeatable)"
    )
    tail.add_argument(
        "--record-type", action="append", metavar="TYPE", help="command, event, command_rejection"
    )
    tail.add_argument(
        "--value-type", action="append", metavar="TYPE", help="e.g. job, process_instance"
    )
    tail.add_argument("--intent", action="append", metavar="INTENT", help="e.g. completed")
    tail.add_argument("--key", type=int, help="only records with this key or process instance key")
    tail.add_argument(
        "--last", type=int, default=10, metavar="N", help="start N records before the end (10)"
    )
    tail.add_argument("--from-beginning", action="store_true", help="start at the log start")
    tail.add_argument(
        "--no-follow", action="store_true", help="stop at the end instead of waiting for more"
    )

    status = add_command(
        commands,
        "status",
        cmd_status,
        "partitions, their owners, consumer lag and snapshot ages",
        examples=STATUS_EXAMPLES,
        local=True,
    )
    status.add_argument("--json", action="store_true", help="print one JSON document")

    export = add_command(
        commands,
        "export",
        cmd_export,
        "re-publish the log's events as JSON, one topic per value type, exactly once",
        examples=EXPORT_EXAMPLES,
        local=True,
    )
    export.add_argument(
        "--value-type", action="append", metavar="TYPE", help="only these value types"
    )
    export.add_argument("--once", action="store_true", help="stop at the log's current end")
    export.add_argument(
        "--name",
        help="this exporter's name, stable across restarts (transactional id; default: host)",
    )
    export.add_argument(
        "--skip-truncated",
        action="store_true",
        help="go on when the log was truncated past the last exported record (a gap)",
    )

    acls = add_command(
        commands,
        "acls",
        cmd_acls,
        "the Kafka ACLs a role needs; --apply creates them",
        examples=ACLS_EXAMPLES,
    )
    acls.add_argument(
        "--role",
        required=True,
        choices=[str(role) for role in KafkaRole],
        help="the part the principal runs",
    )
    acls.add_argument(
        "--principal", required=True, metavar="User:NAME", help="the principal it runs as"
    )
    acls.add_argument(
        "--job-type",
        dest="job_types",
        action="append",
        metavar="TYPE",
        help="job-worker: only jobs of TYPE (repeatable; default: every job type)",
    )
    acls.add_argument(
        "--format",
        choices=["table", "kafka-acls"],
        default="table",
        help="a table (default) or kafka-acls.sh commands",
    )
    acls.add_argument(
        "--apply", action="store_true", help="create the missing ACLs through the admin API"
    )

    chaos = add_command(
        commands,
        "chaos",
        cmd_chaos,
        "load while workers and the broker fail, then check the log (own broker)",
        description="Sustained load while engine workers are killed, frozen, added and"
        " removed and the broker restarts; then checks from the log that every instance"
        " completed exactly once and replay matches. Prints one JSON line.",
        examples=CHAOS_EXAMPLES,
        cluster=False,
    )
    chaos.add_argument("--duration", type=float, default=60.0, help="seconds of load (60)")
    chaos.add_argument("--rate", type=float, default=20.0, help="instances per second (20)")
    chaos.add_argument("--fault-every", type=float, default=5.0, help="seconds between faults (5)")
    chaos.add_argument(
        "--min-faults",
        type=int,
        default=0,
        help="keep the load going past --duration until this many faults happened (0)",
    )
    chaos.add_argument("--seed", type=int, default=1, help="random seed of the faults (1)")
    chaos.add_argument(
        "--hostile-rate",
        type=float,
        default=1.0,
        help="hostile records per second written to <ns>.commands during the load (1; 0: none)",
    )
    chaos.add_argument(
        "--snapshot-records",
        type=int,
        default=1000,
        help="the workers' PARTITA_SNAPSHOT_RECORDS (1000: snapshots and truncation happen)",
    )
    chaos.add_argument(
        "--no-truncate", action="store_true", help="workers keep the whole log (PARTITA_TRUNCATE)"
    )
    chaos.add_argument("--keep", action="store_true", help="keep the logs and data")
