"""Renders `docs/internals/state.md`: every column family of a partition (its key, its value
type, what it maps), then the fields of every stored type, read from the declarations themselves
(`partita.state.columns`, `partita.state.stored`). A test compares it with the committed file.
Regenerate with: `python -m partita.state.state_doc > docs/internals/state.md`.
"""

from __future__ import annotations

import inspect
from typing import Any

import msgspec

from partita.state.columns import VALUE_VERSION, ColumnFamilies
from partita.state.db import STATE_FORMAT

_STORED = "../../engine/partita/state/stored.py"


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "nothing"
    if isinstance(tp, type) and not getattr(tp, "__args__", None):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _value(tp: Any) -> str:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return f"[`{tp.__name__}`](#{tp.__name__.lower()})"
    return f"`{_type_name(tp)}`"


def _summary(tp: type) -> str:
    doc = inspect.getdoc(tp) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def render() -> str:
    definitions = ColumnFamilies.all()
    lines = [
        "# State",
        "",
        "A partition's state is one RocksDB (`partita.state.db.PartitionDb`) with the column",
        "families below, in declaration order, which is also the order of the state digest.",
        f"This is layout {STATE_FORMAT}: every value is the version byte {VALUE_VERSION} and its",
        "MessagePack encoding (`partita.state.values`); structured values are the frozen",
        f"`msgspec.Struct` types of [engine/partita/state/stored.py]({_STORED}),",
        "stored as arrays of their fields. Keys are order-preserving byte encodings",
        "(`partita.state.keys`), so a composite key's leading parts are a prefix to scan. A",
        "queue column family is taken from the front: scans start past what the batch already",
        "deleted there.",
        "",
        "A store of an older layout is upgraded when it opens (`partita.state.migrate`), so",
        "snapshots stay usable across upgrades. To add a field, append it with a default; any",
        "other change to a stored type is a new layout with an upgrade.",
        "",
        "Generated from the declarations by",
        "`python -m partita.state.state_doc > docs/internals/state.md`;",
        "a test fails when this file is stale.",
        "",
        "| column family | key | value | maps |",
        "|---|---|---|---|",
    ]
    for definition in definitions:
        queue = " (queue)" if definition.queue else ""
        lines.append(
            f"| `{definition.name}`{queue} | `{definition.key!r}` |"
            f" {_value(definition.value.value_type)} | {definition.doc} |"
        )
    stored = dict.fromkeys(  # in the order of their first column family
        d.value.value_type
        for d in definitions
        if isinstance(d.value.value_type, type) and issubclass(d.value.value_type, msgspec.Struct)
    )
    lines += ["", "## Stored types"]
    for tp in stored:
        users = ", ".join(f"`{d.name}`" for d in definitions if d.value.value_type is tp)
        lines += [
            "",
            f"### {tp.__name__}",
            "",
            f"{_summary(tp)} Stored in {users}.",
            "",
            "| # | field | type | default |",
            "|---|---|---|---|",
        ]
        for index, field in enumerate(msgspec.structs.fields(tp)):
            default = "required" if field.required else f"`{field.default!r}`"
            if field.default_factory is not msgspec.NODEFAULT:
                default = f"`{field.default_factory()!r}`"
            lines.append(f"| {index} | `{field.name}` | `{_type_name(field.type)}` | {default} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
