"""When a partition's transactions send their consumed offsets to the engine group.

Sending offsets costs a transaction two round trips (AddOffsetsToTxn, which waits until the
coordinator finished the previous transaction, then TxnOffsetCommit) and an extra partition to
mark: at 200 instances/s that was a third of the time between transactions. So a batch's
processed log and ingress positions ride on its last record on the log (the PROCESSED header,
committed with its events; replay and standbys take them from there), and the offsets go to
the group only:

- once `interval_s` (PARTITA_OFFSETS_COMMIT_MS) passed since they last went;
- when the boundary's counters changed (they travel in the offsets' metadata, and stay exact);
- when the batch writes nothing on its own partition (its positions have nothing to ride on).

Offsets that trail are committed in a transaction of their own once they trailed `interval_s`
(`ProcessingStateMachine.commit_read_only`), or at once on a graceful stop. They trail after a
transaction that did not send them, and after the log consumer was moved past the partition's
own records (nothing is read back then to commit them with).
"""

from __future__ import annotations

from partita.processing import ProcessingOutput

OFFSETS_COMMIT_S = 0.1
"""The default interval (PARTITA_OFFSETS_COMMIT_MS, 100 ms)."""


class OffsetCommits:
    """One partition's record of when its offsets last went to the group."""

    __slots__ = ("_due_at", "_sent_counters", "behind_since", "interval_s")

    def __init__(self, interval_s: float = OFFSETS_COMMIT_S) -> None:
        self.interval_s = interval_s
        self._due_at = 0.0
        """When (monotonic) the next transaction sends its offsets even if its positions ride."""
        self._sent_counters: dict[str, int] | None = None
        """The boundary counters last committed in the ingress offset's metadata."""
        self.behind_since: float | None = None
        """Since when the group's offsets trail what was committed (monotonic)."""

    def needed(self, rides: bool, now: float, boundary: dict[str, int]) -> bool:
        """Whether a transaction at `now` sends its offsets: `rides` when its positions have a
        record of its own partition to ride on, `boundary` the counters it would send."""
        return not rides or now >= self._due_at or boundary != self._sent_counters

    def committed(self, now: float, sent: dict[str, int] | None) -> None:
        """A transaction begun at `now` committed, with its offsets and counters `sent`, or
        without them (None)."""
        if sent is not None:
            self._due_at = now + self.interval_s
            self._sent_counters = sent
            self.behind_since = None
        elif self.behind_since is None:
            self.behind_since = now

    def trail(self, now: float) -> None:
        """The group's offsets trail from `now` on (unless they already did): e.g. the log
        consumer was moved past records they do not cover."""
        if self.behind_since is None:
            self.behind_since = now

    def trailed_long_enough(self, now: float) -> bool:
        return self.behind_since is not None and now - self.behind_since >= self.interval_s

    def expire(self) -> None:
        """Let the next transaction send its offsets, as if the interval had passed."""
        self._due_at = 0.0


def writes_on(output: ProcessingOutput, partition: int) -> bool:
    """Whether `output` has a record for `partition` of the log (most often its last one)."""
    return any(target == partition for target, _ in reversed(output.records))
