"""Partition state: typed column families on rocksdict, a read-your-writes batch overlay with
savepoints, checkpoints and a state digest. No Kafka here."""

from partita.state.column_family import ColumnFamily
from partita.state.columns import ColumnFamilies, ColumnFamilyDef
from partita.state.db import PartitionDb
from partita.state.keygen import KeyGenerator
from partita.state.view import ReadOnlyColumn, StateView

__all__ = [
    "ColumnFamilies",
    "ColumnFamily",
    "ColumnFamilyDef",
    "KeyGenerator",
    "PartitionDb",
    "ReadOnlyColumn",
    "StateView",
]
