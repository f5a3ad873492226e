"""The appliers of VARIABLE events: CREATED and UPDATED store the value's JSON text on its
scope (an element instance's variables go when it ends: `instance.appliers`)."""

from __future__ import annotations

from partita.processing.dispatch import Handlers
from partita.processing.variable.state import VARIABLES
from partita.protocol.intents import VariableIntent
from partita.protocol.records import Record
from partita.protocol.values import VariableValue
from partita.state import PartitionDb

handlers = Handlers()


@handlers.applier(VariableIntent.CREATED, VariableIntent.UPDATED)
def apply_variable(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, VariableValue)
    db.column(VARIABLES).upsert((value.scope_key, value.name), value.value)
