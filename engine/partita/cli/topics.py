"""`partita topics apply`: create Partita's topics (declared in topics/topics.toml), the job
topics that turn on push, and the export topics; refuse ones that exist with another shape."""

from __future__ import annotations

import argparse

from partita.cli.common import Subcommands, add_command, add_group, build_config
from partita.config import KafkaRole
from partita.log.security import kafka_access

TOPICS_EXAMPLES = """examples:
  partita topics apply                            the log, commands, snapshots and replies
  partita topics apply --job-type price --export  and <ns>.jobs.price and the export topics
"""

APPLY_EXAMPLES = """examples:
  partita topics apply                                     create what is missing
  partita topics apply --job-type price --job-type notify  jobs of these types are pushed
  partita topics apply --export                            the topics `partita export` writes
  PARTITA_KAFKA_CONFIG_OPERATOR=operator.properties \\
    partita topics apply --bootstrap-servers kafka:9092 --namespace orders

Idempotent: it prints created or exists for each topic, and fails on a topic that exists with
another partition count or config.
"""


def cmd_topics_apply(args: argparse.Namespace) -> int:
    from partita.log.admin import admin_client, wait_for_metadata
    from partita.log.topics import apply_topics, export_topic_specs, job_topic_spec, load_specs

    config = build_config(args)
    access = kafka_access(config, KafkaRole.OPERATOR)
    wait_for_metadata(access, timeout=15.0)
    specs = load_specs(config)
    specs += [job_topic_spec(config, t) for t in getattr(args, "job_types", None) or ()]
    if getattr(args, "export", False):
        specs += export_topic_specs(config)
    outcomes = apply_topics(admin_client(access), specs)
    for spec in specs:
        print(f"{outcomes[spec.name].value:8} {spec.name} ({spec.partitions} partitions)")
    return 0


def register(commands: Subcommands) -> None:
    """Add `partita topics` and its action."""
    _, actions = add_group(
        commands,
        "topics",
        "Partita's topics (declared in topics/topics.toml)",
        examples=TOPICS_EXAMPLES,
        dest="topics_command",
    )
    apply = add_command(
        actions,
        "apply",
        cmd_topics_apply,
        "create missing topics; refuse conflicting ones",
        examples=APPLY_EXAMPLES,
        local=True,
    )
    apply.add_argument(
        "--job-type",
        dest="job_types",
        action="append",
        metavar="TYPE",
        help="also create <ns>.jobs.TYPE, so jobs of TYPE are pushed (repeatable)",
    )
    apply.add_argument(
        "--export",
        action="store_true",
        help="also create the topics of `partita export` (<ns>.export.<value-type>)",
    )
