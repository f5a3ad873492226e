"""What a partition's processing raises to the worker that owns it."""

from __future__ import annotations


class TaskFencedError(Exception):
    """The partition has a newer owner (or the producer hit a fatal error): drop the task."""


class AbortedBatchError(Exception):
    """The transaction was aborted; state changes were dropped and the consumer rewound."""
