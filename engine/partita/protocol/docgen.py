"""Renders `docs/internals/records.md`, the readable reference of every record, from
`avro/record.avsc` (field names, types, defaults, docs) and the intents declared in
`partita.protocol.intents`.

The reference is generated, and a test compares it with the committed file, so the docs cannot
drift from the contract. Regenerate with:
`python -m partita.protocol.docgen > docs/internals/records.md`.
"""

from __future__ import annotations

import json
from typing import Any

from partita.protocol.convert import short_name
from partita.protocol.enums import ValueType
from partita.protocol.intents import (
    CLIENT_COMMANDS,
    INTENTS_BY_VALUE_TYPE,
    Intent,
    internal_commands,
)
from partita.protocol.schemas import current_schema, named_types
from partita.protocol.values import VALUE_CLASSES


def _type_name(avro_type: Any) -> str:
    if isinstance(avro_type, str):
        return short_name(avro_type)
    if isinstance(avro_type, list):
        return " \\| ".join(_type_name(t) for t in avro_type)
    kind = avro_type["type"]
    if kind in ("enum", "record"):
        return short_name(avro_type["name"])
    if kind == "array":
        return f"array<{_type_name(avro_type['items'])}>"
    if kind == "map":
        return f"map<{_type_name(avro_type['values'])}>"
    return str(kind)


def _default(field: dict[str, Any]) -> str:
    if "default" not in field:
        return "(required)"
    return f"`{json.dumps(field['default'])}`"


def _field_table(schema: dict[str, Any]) -> list[str]:
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for field in schema["fields"]:
        lines.append(
            f"| `{field['name']}` | {_type_name(field['type'])} | {_default(field)}"
            f" | {field.get('doc', '')} |"
        )
    return lines


def _nested_records(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for field in schema["fields"]:
        avro_type = field["type"]
        if isinstance(avro_type, dict) and avro_type.get("type") == "array":
            items = avro_type["items"]
            if isinstance(items, dict) and items.get("type") == "record":
                found.append(items)
    return found


def _by_value_type(commands: list[tuple[ValueType, Intent]]) -> list[str]:
    """A table of `commands`, one row per value type, in value type and intent order."""
    grouped: dict[ValueType, list[Intent]] = {}
    for value_type, intent in commands:
        grouped.setdefault(value_type, []).append(intent)
    lines = ["| value type | intents |", "|---|---|"]
    for value_type, intents in grouped.items():
        lines.append(f"| `{value_type.name}` | " + ", ".join(f"`{i.name}`" for i in intents) + " |")
    return lines


def _admission() -> list[str]:
    """The sections that say which commands a client may write to `<ns>.commands`."""
    client = [
        (value_type, member)
        for value_type, enum in INTENTS_BY_VALUE_TYPE.items()
        for member in enum
        if (value_type, member) in CLIENT_COMMANDS
    ]
    return [
        "## Commands a client may send",
        "",
        "Clients write commands to the ingress topic `<ns>.commands`, never to the log; the",
        "engine copies each command it admits into the same partition of the log, with the",
        "header `partitaIngressOffset` (its ingress offset), and processes it there: its events",
        "and rejection have the copy's log offset as `sourceRecordPosition`. The last record",
        "each engine transaction writes to a partition of the log carries one more header,",
        "last: `partitaProcessed` = `<log offset>,<ingress offset>` (decimal ASCII; -1 for",
        "none), the last offsets of that log partition and of its ingress partition processed",
        "once the transaction commits. Consumers may ignore it. These are the commands it",
        "admits (`CLIENT_COMMANDS` in `engine/partita/protocol/intents.py`):",
        "",
        *_by_value_type(client),
        "",
        "## Commands only the engine may write",
        "",
        "Every other command intent is the engine's own (element lifecycle, distribution,",
        "subscriptions, due-date triggers). One that arrives on `<ns>.commands` is rejected",
        "`INVALID_ARGUMENT` with a reason naming it and its ingress offset (the rejection's",
        "`sourceRecordPosition` is -1), and never reaches the log:",
        "",
        *_by_value_type(internal_commands()),
        "",
    ]


def render() -> str:
    raw = json.loads(current_schema().path.read_text())
    by_name = {short_name(b["name"]): b for b in raw["fields"][-1]["type"]}
    out = [
        "# Record reference",
        "",
        "<!-- Generated from avro/record.avsc and engine/partita/protocol/intents.py by",
        "     `python -m partita.protocol.docgen > docs/internals/records.md`;",
        "     a test keeps it current. -->",
        "",
        "Every record on the log is one Avro `Record` (schema `avro/record.avsc`), written with",
        "Avro single-object encoding: the bytes `C3 01`, the 8-byte little-endian CRC-64-AVRO",
        "fingerprint of the schema's Parsing Canonical Form, then the Avro binary body.",
        f"The current fingerprint is `{current_schema().fingerprint_bytes.hex()}`"
        " (as the bytes follow `C3 01`).",
        "",
        "## Envelope: `Record`",
        "",
        *_field_table(raw),
        "",
        "## Value types",
        "",
        "Each value type names the Avro branch of `value` and the intents it may carry.",
        "C marks a command (imperative), E an event (what happened). A COMMAND_REJECTION repeats",
        "the rejected command's intent and value.",
        "",
    ]
    for value_type in ValueType:
        cls = VALUE_CLASSES[value_type]
        schema = by_name[cls.__name__]
        intents = ", ".join(
            f"`{m.name}` ({'E' if m.is_event else 'C'})" for m in INTENTS_BY_VALUE_TYPE[value_type]
        )
        out += [f"### {value_type.name}: `{cls.__name__}`", "", schema.get("doc", ""), ""]
        out += [f"Intents: {intents}", "", *_field_table(schema), ""]
        for nested in _nested_records(schema):
            out += [f"`{short_name(nested['name'])}`: {nested.get('doc', '')}", ""]
            out += [*_field_table(nested), ""]
    out += _admission()
    out += ["## Enums", ""]
    for name, enum in named_types(raw, "enum").items():
        if name != "Intent":  # listed per value type above
            out += [f"- `{name}`: " + ", ".join(f"`{s}`" for s in enum["symbols"])]
            if "default" in enum:  # what readers make of a symbol their schema lacks
                out[-1] += f" (unknown symbols read as `{enum['default']}`). {enum.get('doc', '')}"
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
