"""The key generator of a partition: keys carry the partition id in their top bits.

The counter lives in the meta column family and changes through the overlay, so a rolled back
command gives its keys back and a restart continues after the last committed key. Replay raises
it to the highest key seen (`set_key_if_higher`), as Zeebe's appliers do.
"""

from __future__ import annotations

from engine.protocol.keys import counter_of_key, encode_key, partition_id_of_key
from engine.state.db import PartitionDb

_NEXT = "next_key_counter"


class KeyGenerator:
    def __init__(self, db: PartitionDb, partition_id: int) -> None:
        self._meta = db.meta
        self.partition_id = partition_id

    def next_key(self) -> int:
        counter = self._meta.get(_NEXT) or 1
        self._meta.upsert(_NEXT, counter + 1)
        return encode_key(self.partition_id, int(counter))

    def set_key_if_higher(self, key: int) -> None:
        """After replaying a record with `key` of this partition, never hand it out again."""
        if key <= 0 or partition_id_of_key(key) != self.partition_id:
            return
        if counter_of_key(key) + 1 > (self._meta.get(_NEXT) or 1):
            self._meta.upsert(_NEXT, counter_of_key(key) + 1)
