"""What the chaos run checks, read from the log itself.

`LogTracker` follows every partition of the log read_committed, as the consumer group
`TRACKER_GROUP` (a downstream group of the workers, so truncation never deletes a record before
it was read), and keeps, per creation number `n` (a variable of every instance the run
creates): the instances created for it and how often each completed, and per job the COMPLETED
events. Clients write to ingress, so the client commands it sees are the engine's copies
(COMMAND records with `partitaIngressOffset`): per ingress record, how often it was copied,
what records its copy caused, and the admission rejections naming its ingress offset.
`uncommitted_offsets` reads what is left of the log a second time read_uncommitted: records
there and not in the committed view belong to aborted transactions (left by killed or fenced
workers), and none of them may be visible.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import (
    OFFSET_BEGINNING,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from partita.log.clients import new_consumer
from partita.log.security import KafkaAccess
from partita.processing import Engine
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import BpmnElementType, RecordType
from partita.protocol.errors import ProtocolError
from partita.protocol.headers import CORRELATION_ID, INGRESS_OFFSET, RECORD_TYPE, header
from partita.protocol.intents import JobIntent, ProcessInstanceCreationIntent, ProcessInstanceIntent
from partita.protocol.keys import partition_id_of_kafka
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceCreationValue, ProcessInstanceValue
from partita.state import KeyGenerator, PartitionDb
from partita.state.db import LAST_APPLIED_POSITION


@dataclass(slots=True)
class Findings:
    created: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    """Creation number n -> instance keys created for it (more than one: duplicated)."""
    completed: Counter[int] = field(default_factory=Counter)
    """Instance key -> ELEMENT_COMPLETED events of the process (more than one: duplicated)."""
    jobs_completed: Counter[int] = field(default_factory=Counter)
    results: Counter[tuple[int, int, str, int]] = field(default_factory=Counter)
    """(partition, source command position, intent, key) of every event: a command whose
    events were committed twice (a zombie's transaction) shows up as a count above one."""
    offsets: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    """Committed offsets seen, per partition."""
    copies: dict[tuple[int, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    """(partition, ingress offset) -> log offsets of the engine's copies of that client
    command (more than one: copied twice)."""
    copy_of: dict[tuple[int, int], int] = field(default_factory=dict)
    """(partition, log offset of a copy) -> the ingress offset it was copied from."""
    caused: dict[tuple[int, int], Counter[str]] = field(default_factory=dict)
    """(partition, ingress offset) -> record types caused by its copy (sourceRecordPosition)."""
    refused: Counter[tuple[int, int]] = field(default_factory=Counter)
    """(partition, ingress offset) -> admission rejections naming that ingress record."""
    replies_on_log: int = 0
    """Records on the log with a reply's correlation id header (replies never go there)."""
    events: dict[int, list[Record]] = field(default_factory=lambda: defaultdict(list))
    """Every committed EVENT seen, per partition in log order: what replay from the first
    record would apply, though truncation has since deleted the start of the log."""

    def lost(self, sent: set[int]) -> list[int]:
        """Creation numbers sent without a completed instance."""
        return sorted(
            n for n in sent if not any(self.completed[k] for k in self.created.get(n, []))
        )

    def duplicated(self) -> dict[str, int]:
        return {
            "instances_created_twice": sum(1 for keys in self.created.values() if len(keys) > 1),
            "instances_completed_twice": sum(1 for n in self.completed.values() if n > 1),
            "jobs_completed_twice": sum(1 for n in self.jobs_completed.values() if n > 1),
            "events_written_twice": sum(1 for n in self.results.values() if n > 1),
            "commands_copied_twice": sum(1 for logged in self.copies.values() if len(logged) > 1),
        }

    def outcomes(self, sent: dict[tuple[int, int], str]) -> dict[str, int]:
        """What became of the ingress records `sent` ((partition, offset) -> kind): each must
        have got exactly one rejection, either at admission or as the only record its copy
        caused, and nothing else."""
        counts: Counter[str] = Counter()
        for key in sent:
            caused = self.caused.get(key, Counter())
            rejections = self.refused[key] + caused["COMMAND_REJECTION"]
            if caused["EVENT"]:
                counts["changed_state"] += 1
            elif rejections == 0:
                counts["unanswered"] += 1
            elif rejections > 1 or len(self.copies.get(key, ())) > 1:
                counts["answered_twice"] += 1
            else:
                counts["rejected"] += 1
        return {
            name: counts[name]
            for name in ("rejected", "unanswered", "answered_twice", "changed_state")
        }


_QUIET = logging.getLogger("partita.chaos.kafka")
TRACKER_GROUP = "chaos-tracker"
"""The tracker's consumer group; the workers list it in PARTITA_DOWNSTREAM_GROUPS."""
_COMMIT_EVERY_S = 1.0


class LogTracker:
    def __init__(
        self, access: KafkaAccess, topic: str, ingress_topic: str, partitions: int
    ) -> None:
        self.topic = topic
        self.codec = RecordCodec()
        self.findings = Findings()
        self.refusal = re.compile(rf"record at offset (\d+) of {re.escape(ingress_topic)}/(\d+)\b")
        self.consumer = new_consumer(
            access,
            {
                "group.id": TRACKER_GROUP,  # assign only; commits what it read
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "logger": _QUIET,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 100,
            },
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self._next_commit = 0.0

    def poll(self, seconds: float) -> int:
        """Read what arrived within `seconds` (returns how many records); now and then commit
        how far it read."""
        messages = self.consumer.consume(num_messages=5000, timeout=seconds)
        for message in messages:
            if message.error() is not None:
                continue
            self._take(message)
        if messages and time.monotonic() >= self._next_commit:
            self._next_commit = time.monotonic() + _COMMIT_EVERY_S
            with contextlib.suppress(KafkaException):  # the next commit covers it
                self.consumer.commit(asynchronous=True)
        return len(messages)

    def drain(self, quiet_s: float = 2.0) -> None:
        """Read until nothing more arrives for `quiet_s` (the workers have stopped)."""
        while self.poll(quiet_s):
            pass

    def _take(self, message: Message) -> None:
        partition, offset = int(message.partition() or 0), int(message.offset() or 0)
        found = self.findings
        found.offsets[partition].add(offset)
        headers = message.headers()
        if header(headers, CORRELATION_ID) is not None:
            found.replies_on_log += 1
        copied_from = header(headers, INGRESS_OFFSET)
        if copied_from is not None and header(headers, RECORD_TYPE) == b"COMMAND":
            ingress = int(copied_from)
            found.copies[(partition, ingress)].append(offset)
            found.copy_of[(partition, offset)] = ingress
            return
        try:
            record = self.codec.decode(message.value() or b"", partition=partition, offset=offset)
        except ProtocolError:
            return
        source = record.source_record_position
        copy = found.copy_of.get((partition, source)) if source >= 0 else None
        if copy is not None:
            found.caused.setdefault((partition, copy), Counter())[record.record_type.name] += 1
        if record.record_type is RecordType.COMMAND_REJECTION and source < 0:
            refused = self.refusal.search(record.rejection_reason)
            if refused is not None:
                found.refused[(int(refused.group(2)), int(refused.group(1)))] += 1
        if record.record_type is not RecordType.EVENT:
            return
        found.events[partition].append(record)
        found.results[(partition, source, record.intent.name, record.key)] += 1
        value = record.value
        if record.intent is ProcessInstanceCreationIntent.CREATED:
            assert isinstance(value, ProcessInstanceCreationValue)
            n = json.loads(value.variables or "{}").get("n")
            if isinstance(n, int):
                found.created[n].append(record.key)
        elif (
            record.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
            and isinstance(value, ProcessInstanceValue)
            and value.bpmn_element_type is BpmnElementType.PROCESS
        ):
            found.completed[record.key] += 1
        elif record.intent is JobIntent.COMPLETED:
            found.jobs_completed[record.key] += 1

    def close(self) -> None:
        self.consumer.close()


def replay_seen(findings: Findings, engine: Engine, partition: int, live: Path) -> tuple[int, bool]:
    """Apply every event of `partition` the tracker saw, from the first, into a fresh store up
    to the live store's last applied position; returns the events applied and whether the
    digests are equal. Covers what `verify-replay` cannot once the log start moved."""
    with PartitionDb(live, read_only=True) as view:
        position = view.position(LAST_APPLIED_POSITION)
        live_digest = view.digest()
    with (
        tempfile.TemporaryDirectory(prefix=f"partita-chaos-replay-{partition}-") as scratch,
        PartitionDb(Path(scratch) / "replayed") as fresh,
    ):
        keys = KeyGenerator(fresh, partition_id_of_kafka(partition))
        applied = 0
        for record in findings.events[partition]:
            if record.position > position:
                break
            engine.apply(record, fresh)
            keys.set_key_if_higher(record.key)
            applied += 1
        fresh.commit(last_applied_position=position)
        return applied, fresh.digest() == live_digest


def uncommitted_offsets(
    access: KafkaAccess, topic: str, partitions: int
) -> tuple[dict[int, int], dict[int, set[int]]]:
    """Where each partition now starts (truncation moves it) and the offsets of its data
    records from there, read_uncommitted (transaction markers are never delivered, so they
    are not among them)."""
    consumer = new_consumer(
        access,
        {
            "group.id": "chaos-uncommitted",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_uncommitted",
        },
    )
    seen: dict[int, set[int]] = defaultdict(set)
    starts: dict[int, int] = {}
    try:
        for p in range(partitions):
            low, _ = consumer.get_watermark_offsets(TopicPartition(topic, p), 30, cached=False)
            starts[p] = int(low)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        at_end = 0
        while at_end < partitions:
            message = consumer.poll(10)
            if message is None:
                break
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:  # one per partition
                    at_end += 1
                continue
            seen[int(message.partition() or 0)].add(int(message.offset() or 0))
    finally:
        consumer.close()
    return starts, seen
