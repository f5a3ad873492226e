"""The key generator of a partition: keys carry the partition id in their top bits.

The counter lives in the meta column family and changes through the overlay, so a rolled back
command gives its keys back and a restart continues after the last committed key. Replay raises
it to the highest key seen (`set_key_if_higher`), as Zeebe's appliers do; replay notes the
keys of its events (`note_key`) and writes the highest once per chunk (`write_noted`), a write
per chunk instead of one per new key.
"""

from __future__ import annotations

from partita.protocol.keys import MAX_COUNTER, encode_key
from partita.state.db import PartitionDb

_NEXT = "next_key_counter"


class KeyGenerator:
    def __init__(self, db: PartitionDb, partition_id: int) -> None:
        self._counter = db.meta.entry(_NEXT)
        self._overlay = db.overlay
        self.partition_id = partition_id
        self._lowest = encode_key(partition_id, 0)
        self._highest = encode_key(partition_id, MAX_COUNTER)
        self._below = 0
        """A key of this partition the counter is known to be past (replay sees keys in
        ascending order, so most keys need no look at the counter) ..."""
        self._rollbacks = -1
        """... as long as the overlay has not rolled back since (`Overlay.rollbacks`)."""
        self._noted = 0

    def next_key(self) -> int:
        counter = self._counter.get() or 1
        if counter > MAX_COUNTER:  # encode_key's check, without its call on every key
            encode_key(self.partition_id, counter)
        self._counter.upsert(counter + 1)
        return self._lowest | counter

    def set_key_if_higher(self, key: int) -> None:
        """After replaying a record with `key` of this partition, never hand it out again."""
        if key <= self._below and self._rollbacks == self._overlay.rollbacks:
            return
        if not self._lowest < key <= self._highest:
            return  # not a key, or another partition's
        counter = key & MAX_COUNTER
        if counter + 1 > (self._counter.get() or 1):
            self._counter.upsert(counter + 1)
        self._below = key
        self._rollbacks = self._overlay.rollbacks

    def note_key(self, key: int) -> None:
        """`set_key_if_higher(key)`, deferred to the next `write_noted`: the caller must call
        it before it commits the store, or the keys it noted may be handed out again."""
        if self._noted < key <= self._highest and key > self._lowest:
            self._noted = key

    def write_noted(self) -> None:
        """Raise the counter past the highest key noted since the last call."""
        if self._noted:
            self.set_key_if_higher(self._noted)
            self._noted = 0
