"""Partition state: typed column families on rocksdict, a read-your-writes batch overlay with
savepoints, checkpoints and a state digest. No Kafka here."""

from engine.state.column_family import ColumnFamily
from engine.state.columns import ColumnFamilies, ColumnFamilyDef
from engine.state.db import PartitionDb
from engine.state.keygen import KeyGenerator
from engine.state.view import ReadOnlyColumn, StateView

__all__ = [
    "ColumnFamilies",
    "ColumnFamily",
    "ColumnFamilyDef",
    "KeyGenerator",
    "PartitionDb",
    "ReadOnlyColumn",
    "StateView",
]
