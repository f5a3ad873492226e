"""Which of the topics an engine hook writes to have readers now.

Job push writes `<ns>.jobs.<type>` only while the type's workers' group has members
(`JobPush.readers`); the worker asks here every few seconds, with its topic refresh. When the
cluster cannot say (the engine lacks Describe on the groups, as before that right was in its
ACLs), every topic counts as read, as it did before, and that is logged once.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from partita.log.admin import admin_client, groups_with_members
from partita.log.security import KafkaAccess
from partita.processing.dispatch import TopicHook

_LOG = logging.getLogger("partita.worker")


class TopicReaders:
    def __init__(self, access: KafkaAccess) -> None:
        self.access = access
        self._admin: AdminClient | None = None
        self._warned = False
        self.waiting = False
        """Whether the last look found a topic without readers: the worker looks again
        sooner, so workers that just joined get their jobs within a second."""

    def read(self, hook: TopicHook, topics: dict[str, int]) -> dict[str, int]:
        """Those of `topics` (name -> partitions) whose readers have members now."""
        self.waiting = False
        readers = {name: hook.readers(name) for name in topics}
        groups = sorted({g for g in readers.values() if g is not None})
        try:
            if self._admin is None:
                self._admin = admin_client(self.access)
            present = groups_with_members(self._admin, groups)
        except KafkaException as exc:
            if not self._warned:
                self._warned = True
                _LOG.warning(
                    "cannot describe the job workers' groups (%s): pushing to every job topic"
                    " whether or not it has workers; grant the engine Describe on the groups"
                    " that `partita acls --role engine` lists",
                    exc.args[0].str(),
                )
            return topics
        read = {n: p for n, p in topics.items() if readers[n] is None or readers[n] in present}
        self.waiting = len(read) < len(topics)
        return read
