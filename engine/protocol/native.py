"""The compiled Avro decoder (`partita_native`, built from `native/` by `scripts/setup`), when
there is one.

The native decoder interprets a *program* compiled here from the schema: one entry per Avro
record, `(class or None, ops)`, the envelope first (see `native/src/lib.rs`). It returns what
`engine.protocol.decoder.compile_decoder` returns for the same bytes: the envelope's fields as
a tuple, its enums as symbols, the value as (Avro name, value struct), nested enums as members.

`PARTITA_NATIVE` chooses: `auto` (the default) uses it when it is installed; `off` never does
(the pure-Python decoder, which the test suite also runs); `on` requires it, failing at start
with the command that builds it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from engine.errors import ConfigError
from engine.protocol.convert import snake_case
from engine.protocol.decoder import ENUM_CLASSES, VALUE_CLASSES, short

MODES = ("auto", "on", "off")
BUILD = ".venv/bin/python -m pip install ./native  (needs Rust's cargo; scripts/setup runs it)"

Decode = Callable[[bytes, int], tuple[tuple[Any, ...], int]]


def mode() -> str:
    """`PARTITA_NATIVE`, checked."""
    value = os.environ.get("PARTITA_NATIVE", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ConfigError(f"PARTITA_NATIVE is {value!r}; use one of {', '.join(MODES)}")
    return value


def native_decoder(schema: dict[str, Any], want: bool | None = None) -> Decode | None:
    """The compiled decoder of the envelope `schema`, or None for the pure-Python one.

    `want` None follows `PARTITA_NATIVE` (auto: when installed); True requires it; False
    declines it."""
    chosen = mode() if want is None else ("on" if want else "off")
    if chosen == "off":
        return None
    try:
        import partita_native  # lazy: optional compiled extension, absent in a pure install
    except ImportError as exc:
        if chosen == "on":
            raise ConfigError(
                f"PARTITA_NATIVE=on but the compiled codec is not installed ({exc}); build it"
                f" with {BUILD}, or set PARTITA_NATIVE=auto"
            ) from None
        return None
    decoder = partita_native.Decoder(compile_program(schema))
    decode: Decode = decoder.decode
    return decode


def compile_program(schema: dict[str, Any]) -> list[tuple[type[Any] | None, tuple[Any, ...]]]:
    """The native decoder's program for the envelope `schema` (record 0)."""
    return _Program().build(schema)


class _Program:
    def __init__(self) -> None:
        self.entries: list[tuple[type[Any] | None, tuple[Any, ...]]] = []
        self.index: dict[str, int] = {}

    def build(self, schema: dict[str, Any]) -> list[tuple[type[Any] | None, tuple[Any, ...]]]:
        self.record(schema, envelope=True)
        return self.entries

    def record(self, schema: dict[str, Any], *, envelope: bool = False) -> int:
        name = short(schema["name"])
        if name in self.index:
            return self.index[name]
        at = len(self.entries)
        self.index[name] = at
        self.entries.append((None, ()))  # reserved: fields may refer back to this record
        ops = tuple(self.op(field["type"], symbols=envelope) for field in schema["fields"])
        cls = None if envelope else VALUE_CLASSES[name]
        if cls is not None:
            fields = tuple(snake_case(field["name"]) for field in schema["fields"])
            if fields != cls.__struct_fields__[: len(fields)]:  # positional, later ones default
                raise TypeError(f"{cls.__name__}'s fields do not begin with those of {name}")
        self.entries[at] = (cls, ops)
        return at

    def op(self, avro_type: Any, *, symbols: bool = False) -> tuple[Any, ...]:
        if isinstance(avro_type, str):
            if avro_type in ("long", "int"):
                return ("long",)
            if avro_type in ("string", "bytes", "boolean", "null"):
                return (avro_type,)
            return ("record", self.index[short(avro_type)])
        if isinstance(avro_type, list):
            if len(avro_type) == 2 and avro_type[0] == "null":
                return ("nullable", self.op(avro_type[1], symbols=symbols))
            branches = []
            for branch in avro_type:
                name = branch["name"] if isinstance(branch, dict) else branch
                index = self.record(branch) if isinstance(branch, dict) else self.index[short(name)]
                branches.append((name, index))
            return ("union", tuple(branches))
        kind = avro_type["type"]
        if kind == "record":
            return ("record", self.record(avro_type))
        if kind == "enum":
            cls = ENUM_CLASSES.get(short(avro_type["name"]))
            names = avro_type["symbols"]
            members = tuple(names) if symbols or cls is None else tuple(cls[s] for s in names)
            return ("enum", members)
        if kind == "array":
            return ("array", self.op(avro_type["items"]))
        if kind == "map":
            return ("map", self.op(avro_type["values"]))
        return self.op(kind, symbols=symbols)
