"""Opening a partition's store, upgrading one an older build wrote.

A store is derived data, but it is not always cheap or even possible to rebuild: once the log
is truncated below a snapshot, the snapshot is the only copy of the state before it. So a
store (or a restored snapshot) written with an older layout is upgraded in place, in one
RocksDB write batch, and only one this build cannot read or upgrade is deleted to be rebuilt
from the log (as Zeebe's `DbMigrator` runs its migrations before a partition processes).

Layouts:
- 2: every value `0x01 + JSON` (dicts with camelCase keys for most column families, snake_case
  for timers and process message subscriptions), and an unused `await_result` column family.
- 3: typed values, `0x02 + MessagePack` (`partita.state.stored`).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from partita.state.columns import ColumnFamilies, ColumnFamilyDef
from partita.state.db import META, STATE_FORMAT, STATE_FORMAT_KEY, PartitionDb
from partita.state.errors import StateError, StoreLockedError

_LOG = logging.getLogger("partita.state")

Upgrade = Callable[[PartitionDb], int]
"""Rewrites the store's values from one layout to the next into its overlay; returns how many
values it rewrote. The caller commits the overlay with the new layout number."""


def open_current(
    path: Path, *, lock_wait_s: float = 0.0, waiting: Callable[[float], None] | None = None
) -> PartitionDb:
    """The store at `path` in this build's layout: as it is, upgraded, or (a layout that
    cannot be upgraded) deleted and empty, for the caller to rebuild from the log. While
    another handle holds the store's lock, tries again for up to `lock_wait_s` seconds,
    telling `waiting` (the seconds left) every 10 s; then StoreLockedError."""
    db = _open_waiting(path, lock_wait_s, waiting)
    found = db.state_format
    if found == STATE_FORMAT:
        db.drop_undeclared()
        return db
    if found is not None and found in UPGRADES:
        try:
            return _upgrade(db, found)
        except StateError:
            db.close()
            raise
    db.close()
    _LOG.warning(
        "state at %s has layout %s, this build uses %d and cannot upgrade it: deleting it to"
        " rebuild from the log",
        path,
        found,
        STATE_FORMAT,
    )
    shutil.rmtree(path)
    return PartitionDb(path)


def _open_waiting(
    path: Path, lock_wait_s: float, waiting: Callable[[float], None] | None
) -> PartitionDb:
    deadline = time.monotonic() + lock_wait_s
    next_notice = 0.0
    while True:
        try:
            return PartitionDb(path)
        except StoreLockedError:
            now = time.monotonic()
            if now >= deadline:
                raise
            if waiting is not None and now >= next_notice:
                waiting(deadline - now)
                next_notice = now + 10
            time.sleep(0.2)


def readable(state_format: int) -> bool:
    """Whether a store (or snapshot) of `state_format` opens here, upgraded if need be."""
    return state_format == STATE_FORMAT or state_format in UPGRADES


def _upgrade(db: PartitionDb, found: int) -> PartitionDb:
    layout = found
    while layout != STATE_FORMAT:
        rewritten = UPGRADES[layout](db)
        layout += 1
        db.set_state_format(layout)
        db.commit()
        _LOG.info(
            "state at %s upgraded from layout %d to %d (%d values rewritten)",
            db.path,
            layout - 1,
            layout,
            rewritten,
        )
    db.drop_undeclared()
    return db


# -- layout 2 -> 3 ----------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(name: str) -> str:
    return _CAMEL.sub(r"_\1", name).lower()


def _layout2_value(definition: ColumnFamilyDef[Any, Any], key: bytes, raw: bytes) -> Any:
    """The layout-3 value of a layout-2 entry of `definition`."""
    where = f"column family {definition.name!r}, key {key.hex()}"
    if not raw or raw[0] != 1:
        raise StateError(f"cannot upgrade {where}: not a layout-2 value (version byte 1)")
    try:
        old = json.loads(raw[1:].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StateError(f"cannot upgrade {where}: its JSON does not parse: {exc}") from None
    value_type = definition.value.value_type
    if (
        isinstance(old, dict)
        and isinstance(value_type, type)
        and issubclass(value_type, msgspec.Struct)
    ):
        old = _fields_in_order(value_type, {_snake(k): v for k, v in old.items()}, where)
    try:
        return msgspec.convert(old, value_type)
    except msgspec.ValidationError as exc:
        raise StateError(f"cannot upgrade {where} to {value_type.__name__}: {exc}") from None


def _fields_in_order(
    value_type: type[msgspec.Struct], old: dict[str, Any], where: str
) -> list[Any]:
    fields = msgspec.structs.fields(value_type)
    unknown = set(old) - {f.name for f in fields}
    if unknown:
        raise StateError(
            f"cannot upgrade {where}: {value_type.__name__} has no field {sorted(unknown)}"
        )
    ordered = []
    for field in fields:
        if field.name in old:
            ordered.append(old[field.name])
        elif field.default is not msgspec.NODEFAULT:
            ordered.append(field.default)
        elif field.default_factory is not msgspec.NODEFAULT:
            ordered.append(field.default_factory())
        else:
            raise StateError(
                f"cannot upgrade {where}: its {value_type.__name__} has no {field.name!r}"
            )
    return ordered


def _from_layout_2(db: PartitionDb) -> int:
    rewritten = 0
    format_key = META.key.encode(STATE_FORMAT_KEY)
    for definition in ColumnFamilies.all():
        for key, raw in list(db.committed(definition.name)):
            if definition is META and key == format_key:
                continue  # raw, not a value
            value = _layout2_value(definition, key, raw)
            db.put_raw(definition.name, key, definition.value.encode(value))
            rewritten += 1
    return rewritten


UPGRADES: dict[int, Upgrade] = {2: _from_layout_2}
"""Layout -> the upgrade to the next one."""
