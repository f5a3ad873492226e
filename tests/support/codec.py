"""The record codec the protocol tests share, and a small valid encoding to damage."""

from __future__ import annotations

from partita.protocol.codec import RecordCodec
from partita.protocol.intents import JobIntent
from partita.protocol.records import command
from partita.protocol.values import JobValue

CODEC = RecordCodec()


def valid_encoding() -> bytes:
    """The bytes of a small valid record (a job COMPLETE command)."""
    return CODEC.encode(command(JobIntent.COMPLETE, JobValue(type="t"), key=2251799813685249))
