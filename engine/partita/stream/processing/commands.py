"""Running one command of a batch (`partita.stream.processing.state_machine` step 4): its processor
inside a savepoint, then its follow-up commands depth-first, up to `max_commands_in_batch`;
follow-ups beyond it are written to the log as commands.

A rejection rolls back only that command and answers it; a `HandOverError` writes it, with
its reply address, to the partition that processes it instead; records too large for Kafka
turn into an EXCEEDED_BATCH_RECORD_SIZE rejection; any other exception is retried once alone,
and if it fails again an ERROR event is written and the process instance is banned. Every
attempt that fails leaves nothing behind: state, outputs, follow-ups, reply and awaited
results are undone to the savepoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from msgspec.structs import replace

from partita.processing import Engine, ProcessingContext, RejectionError
from partita.processing.awaiting import AwaitedResults
from partita.processing.banning import is_banned
from partita.processing.context import HandOverError
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RejectionType
from partita.protocol.headers import Headers, ReplyTo, record_headers
from partita.protocol.records import Record
from partita.state import PartitionDb
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing.failures import write_processing_error
from partita.stream.processing.provisional import describe
from partita.stream.processing.sizes import oversized_records

_LOG = logging.getLogger("partita.processing")


class CommandRunner:
    """Runs the commands of one partition's batches (the batch's context is passed in)."""

    def __init__(  # noqa: PLR0917 - what a command's processing touches, spelled out
        self,
        engine: Engine,
        db: PartitionDb,
        codec: RecordCodec,
        partition: int,
        metrics: ProcessingMetrics,
        awaiting: AwaitedResults,
        clock: Callable[[], float],
        max_commands_in_batch: int,
    ) -> None:
        self.engine = engine
        self.db = db
        self.codec = codec
        self.partition = partition
        self.metrics = metrics
        self.awaiting = awaiting
        self.clock = clock
        self.max_commands_in_batch = max_commands_in_batch

    def process(
        self,
        context: ProcessingContext,
        record: Record,
        reply: ReplyTo | None,
    ) -> int:
        """Process `record` and, depth-first, the follow-up commands it causes, up to
        `max_commands_in_batch` commands; further follow-ups go to the log as commands."""
        queue = [(record, reply)]
        processed = 0
        while queue:
            command, address = queue.pop()
            if processed >= self.max_commands_in_batch:
                context.output.records.append((self.partition, command))
                continue
            processed += 1
            context.follow_ups = []
            self._run_processor(context, command, address)
            if context.follow_ups:
                self.metrics.follow_ups += len(context.follow_ups)
                queue.extend((follow_up, None) for follow_up in reversed(context.follow_ups))
        return processed

    def _run_processor(
        self, context: ProcessingContext, command: Record, address: ReplyTo | None
    ) -> None:
        self.metrics.commands += 1
        processor = self.engine.find_processor(command)
        context.begin(command, address, int(self.clock() * 1000))
        if processor is None:
            context.reject(
                RejectionType.INVALID_ARGUMENT,
                f"no processor for {command.value_type.name} {command.intent.name} in this engine",
            )
            self.metrics.rejections += 1
            return
        instance = getattr(command.value, "process_instance_key", -1)
        if is_banned(self.db, instance):
            context.reject(
                RejectionType.INVALID_STATE,
                f"process instance {instance} is banned after an unexpected processing error;"
                " see its ERROR event",
            )
            self.metrics.rejections += 1
            return
        output, overlay = context.output, self.db.overlay
        for attempt in (1, 2):
            mark = (  # ProcessingOutput.mark() and the awaited results', without the calls
                len(output.records),
                len(output.replies),
                len(output.forwarded),
                len(output.pushed),
                self.awaiting.mark(),
            )
            overlay.savepoint()
            try:
                processor(command, context)
                for hook in self.engine.after_command_hooks:
                    hook(command, context)
            except RejectionError as rejection:
                self._undo(context, mark, command, address)
                context.reject(rejection.rejection_type, rejection.reason)
                self.metrics.rejections += 1
                return
            except HandOverError as hand_over:
                self._undo(context, mark, command, address)
                self._hand_over(context, command, address, hand_over.partition)
                return
            except Exception as exc:
                self._undo(context, mark, command, address)
                if attempt == 1:
                    continue
                self._write_error(context, command, instance, exc)
                return
            else:
                oversized = oversized_records(self.codec, output, mark)
                if oversized is not None:
                    self._undo(context, mark, command, address)
                    context.reject(RejectionType.EXCEEDED_BATCH_RECORD_SIZE, oversized)
                    self.metrics.rejections += 1
                    return
                overlay.release_savepoint()
                return

    def _hand_over(
        self, context: ProcessingContext, command: Record, address: ReplyTo | None, target: int
    ) -> None:
        """Write `command`, with its reply address, to partition `target` of the log, which
        processes it instead of this one."""
        record = replace(command, partition_id=target + 1, source_record_position=-1, position=-1)
        headers: Headers = list(record_headers(record))
        if address is not None:
            headers.extend(address.headers())
        context.output.forwarded.append((target, self.codec.encode(record), headers))
        self.metrics.forwarded += 1

    def _undo(
        self,
        context: ProcessingContext,
        mark: tuple[int, int, int, int, int],
        command: Record,
        address: ReplyTo | None,
    ) -> None:
        """Forget everything the failed attempt did: state, outputs, follow-ups, reply,
        awaited results."""
        self.db.overlay.rollback_to_savepoint()
        context.output.truncate(mark[:4])
        self.awaiting.rollback(mark[4])
        context.follow_ups = []
        context.begin(command, address, context.now)

    def _write_error(
        self, context: ProcessingContext, command: Record, instance: int, exc: Exception
    ) -> None:
        self.metrics.errors += 1
        _LOG.error(
            "partition %d: %s %s at %s failed twice; writing ERROR and banning instance %d",
            self.partition,
            command.value_type.name,
            command.intent.name,
            describe(command.position),
            instance,
            exc_info=exc,
        )
        write_processing_error(context, command, instance, exc)
