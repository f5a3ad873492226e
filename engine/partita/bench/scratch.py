"""The fresh namespace each broker benchmark runs in, and its removal when the benchmark ends.

A benchmark writes hundreds of thousands of records to topics of its own (`bench1a2b3c4d.log`,
`e2e5e6f7a8b.commands`, ...). Left on the cluster, a day of runs filled the local broker with
hundreds of partitions and gigabytes, and it got slower. So every benchmark deletes the topics
and consumer groups of its namespace when it ends, unless asked to keep them
(`--keep-topics`, to look at what it wrote with `partita tail --namespace ...`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from confluent_kafka import KafkaException

from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.security import kafka_access

_LOG = logging.getLogger("partita.bench")
_TIMEOUT_S = 30.0


@contextmanager
def scratch_namespace(
    config: Config, prefix: str, *, keep: bool = False, **changes: Any
) -> Iterator[Config]:
    """`config` in a new namespace `<prefix><8 hex digits>` (with `changes`); its topics and
    groups are deleted on the way out, error or not, unless `keep`."""
    scratch = replace(config, namespace=f"{prefix}{uuid.uuid4().hex[:8]}", **changes)
    try:
        yield scratch
    finally:
        if not keep:
            delete_namespace(scratch)


def delete_namespace(config: Config) -> list[str]:
    """Delete every topic and consumer group named `<namespace>.*`; returns the topics deleted.
    A failure is logged, never raised: the benchmark's figures are already measured."""
    prefix = f"{config.namespace}."
    try:
        admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
        topics = sorted(
            name for name in admin.list_topics(timeout=_TIMEOUT_S).topics if name.startswith(prefix)
        )
        if topics:
            for future in admin.delete_topics(topics, operation_timeout=_TIMEOUT_S).values():
                future.result()
        listed = admin.list_consumer_groups(request_timeout=_TIMEOUT_S).result()
        groups = [g.group_id for g in listed.valid if g.group_id.startswith(prefix)]
        if groups:
            deleting = admin.delete_consumer_groups(groups, request_timeout=_TIMEOUT_S)
            for group, future in deleting.items():
                try:
                    future.result()
                except KafkaException as exc:  # e.g. a member still leaving: it expires
                    _LOG.debug("consumer group %s not deleted: %s", group, exc)
    except KafkaException as exc:
        _LOG.warning(
            "could not delete the benchmark's topics %s*: %s; delete them with your Kafka tools",
            prefix,
            exc.args[0].str() if exc.args else exc,
        )
        return []
    return topics
