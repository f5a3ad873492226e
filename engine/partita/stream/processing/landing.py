"""Where one partition's transactional producer's records land on its own partition of the log.

The engine is most often its partition's only writer, so a batch's client-command copies land
right past its last transaction's commit marker. `Landing` keeps what the last transactions
showed: where the next record lands if nothing else writes there first (`next_position`), how
many batches in a row landed there, and the offsets only the last transaction's own records
hold (`written`, `own_from`: `partita.stream.processing.own_records`).
`partita.stream.processing.transaction` asks it whether a batch's copies may be processed at
predicted positions, and whether they landed there.
"""

from __future__ import annotations

MOST_TRUSTED_AFTER = 4096
"""Batches that must land as predicted before predicting again, at most (after many misses)."""


class Landing:
    __slots__ = (
        "_as_expected",
        "_copies",
        "_landed",
        "_trusted_after",
        "next_position",
        "own_from",
        "positions",
        "written",
    )

    def __init__(self) -> None:
        self.positions: list[int] = []
        """The log offsets the batch's copies were delivered at (by delivery reports)."""
        self._copies = 0
        self.next_position: int | None = None
        """Where this producer's next record on its partition lands if nothing else writes
        there first: past the last record it committed there and that transaction's commit
        marker (None: not known, e.g. after an abort)."""
        self._landed = 0
        """Batches in a row whose copies landed at `next_position` and on."""
        self._trusted_after = 1
        """`_landed` needed before a batch's copies get predicted positions; each miss
        doubles it (a partition other producers write to soon stops predicting)."""
        self.own_from: int | None = None
        """When the last committed transaction's copies landed where expected (predicted or
        not), right past this producer's last record before them: the offset between, that
        transaction's commit marker (nothing else fits there), so every offset from it to the
        end of `written` is this producer's own. None otherwise."""
        self._as_expected = False
        self.written: tuple[int, int] | None = None
        """The first and last log offset of the last committed transaction when every record
        between them is one it wrote and none of them is a command left to process (its
        copies came first, and nothing else landed among its records): read back, they need
        no look at their headers. None when not known."""

    def predict(self, copies: int) -> list[int] | None:
        """The positions a batch's `copies` will land at, when the last batches' copies landed
        where predicted; None otherwise (they are produced at once and waited for)."""
        self._copies = copies
        self.positions = []
        start = self.start()
        return None if start is None else list(range(start, start + copies))

    def start(self) -> int | None:
        """Where `predict` would have a batch's copies start, or None (not predicted)."""
        start = self.next_position
        return start if start is not None and self._landed >= self._trusted_after else None

    def delivered(self) -> list[int] | None:
        """The offsets the unpredicted copies landed at, in order, once all were delivered
        (None: some were not). Copies right at `next_position` and on count toward
        predicting again."""
        positions = self.positions
        if len(positions) != self._copies:
            return None
        positions.sort()  # one partition, one producer: offsets follow the produce order
        start = self.next_position
        if start is not None and positions == list(range(start, start + len(positions))):
            self._landed += 1
            self._as_expected = True
        else:
            self._landed = 0
        return positions

    def as_predicted(self, predicted: list[int]) -> bool:
        """Whether the copies landed at their `predicted` positions.

        Only the first and the last copy report where they landed (a delivery report costs
        a Python call and a message object per record): one producer's records on one
        partition land in the order produced, each past the one before, and the commit fails
        if any of them was not written. So the first at the first predicted offset and the
        last at the last one leave room for the copies between and nothing else."""
        ends = [predicted[0], predicted[-1]] if len(predicted) > 1 else predicted
        if sorted(self.positions) != ends:
            return False
        self.positions = list(predicted)
        self._as_expected = True
        return True

    def all_reported(self, predicted: list[int]) -> bool:
        """Whether both ends of predicted copies reported (if not, one was not written)."""
        return len(self.positions) == min(len(predicted), 2)

    def mispredicted(self) -> None:
        """Copies landed elsewhere: twice as many batches must land as expected first."""
        self._trusted_after = min(self._trusted_after * 2, MOST_TRUSTED_AFTER)

    def begin_commit(self) -> None:
        """Nothing of the last transaction is known to be read back as its own any more."""
        self.written = self.own_from = None

    def committed(self, last_own: list[int], written: int) -> None:
        """A transaction committed: where the next record lands, from the last one it put on
        the partition (past it: the commit marker; unchanged by a transaction that wrote
        nothing there, which has no marker there). Names `written` when the copies and the
        `written` records that followed fill the offsets from the first to the last (`written`
        -1: a command among them is left to process), and `own_from` when the copies also
        landed where expected."""
        copies = self.positions
        if last_own:
            self.next_position = last_own[-1] + 2
        elif copies:
            self.next_position = max(copies) + 2
        if copies and written >= 0:
            first, last = min(copies), (last_own[-1] if last_own else max(copies))
            if last - first + 1 == len(copies) + written:
                self.written = (first, last)
        self.positions = []
        as_expected, self._as_expected = self._as_expected, False
        if as_expected and self.written is not None:
            self.own_from = self.written[0] - 1

    def unknown(self) -> None:
        """Aborted: the abort's marker, and whatever else landed meanwhile, moved the end."""
        self.next_position = None
        self._as_expected = False
        self._landed = 0
        self.positions = []
