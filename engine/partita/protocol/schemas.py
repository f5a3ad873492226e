"""The Avro schemas of the record envelope: the current one and every earlier version.

`avro/record.avsc` is the schema this engine writes and reads into. `avro/history/*.avsc` are
earlier versions still accepted as writer schemas: records written with them are resolved into
the current schema (Avro schema resolution), so a compatible change never strands old records.

Fingerprints are CRC-64-AVRO (Rabin) of the Parsing Canonical Form, as Avro's single-object
encoding specifies; `fingerprint_bytes` is the little-endian form that follows `C3 01`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import to_parsing_canonical_form

from partita.resources import contract_dir

_EMPTY = 0xC15D213AA4D7A795


def _table() -> list[int]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY & -(fp & 1))
        table.append(fp)
    return table


_TABLE = _table()


def crc64_avro(data: bytes) -> int:
    """The 64-bit Rabin fingerprint Avro calls CRC-64-AVRO, as an unsigned int."""
    fp = _EMPTY
    for byte in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ byte) & 0xFF]
    return fp


def named_types(schema: Any, kind: str) -> dict[str, dict[str, Any]]:
    """Every named `kind` ("record" or "enum") defined in a raw schema, by short name, in
    order of definition (nested definitions included)."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("type") == kind:
                found.setdefault(node["name"].rsplit(".", 1)[-1], node)
            for key in ("fields", "type", "items", "values"):
                if key in node:
                    walk(node[key])

    walk(schema)
    return found


@dataclass(frozen=True, slots=True)
class WriterSchema:
    """One known schema version: its file, parsed form and fingerprint."""

    path: Path
    schema: Any  # fastavro's parsed schema
    raw: Any  # the schema as JSON
    canonical: str
    fingerprint: int

    @property
    def fingerprint_bytes(self) -> bytes:
        return self.fingerprint.to_bytes(8, "little")


def load_schema(path: Path) -> WriterSchema:
    raw = json.loads(path.read_text())
    # Fresh named-type registries per file: versions define the same names differently.
    parsed = fastavro.parse_schema(raw, named_schemas={})
    canonical = to_parsing_canonical_form(raw)
    return WriterSchema(path, parsed, raw, canonical, crc64_avro(canonical.encode("utf-8")))


@cache
def current_schema() -> WriterSchema:
    """The schema this engine writes: `avro/record.avsc`."""
    return load_schema(contract_dir("avro") / "record.avsc")


@cache
def known_schemas() -> tuple[WriterSchema, ...]:
    """The current schema first, then every version under `avro/history/`."""
    history = sorted((contract_dir("avro") / "history").glob("*.avsc"))
    return (current_schema(), *(load_schema(path) for path in history))
