"""Conversion between the Python records (frozen structs, enums) and the plain dicts fastavro
reads and writes. Converters are built once from the Avro schema, so the per-record work is a
loop over precomputed (avro name, attribute, converter) triples."""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from typing import Any

from msgspec import Struct

from partita.protocol import enums, values
from partita.protocol.errors import EncodeError

Convert = Callable[[Any], Any]

_ENUMS: dict[str, type[Enum]] = {
    cls.__name__: cls
    for cls in vars(enums).values()
    if isinstance(cls, type) and issubclass(cls, Enum) and cls is not Enum
}
_CLASSES: dict[str, type[Any]] = {
    name: cls
    for name, cls in vars(values).items()
    if isinstance(cls, type) and issubclass(cls, Struct) and cls is not Struct
}


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def short_name(fullname: str) -> str:
    return fullname.rsplit(".", 1)[-1]


class RecordConverter:
    """Converts one Avro record type to and from its dataclass."""

    def __init__(self, schema: dict[str, Any], registry: dict[str, RecordConverter]) -> None:
        self.fullname: str = schema["name"]
        self.cls = _CLASSES[short_name(self.fullname)]
        self.value_type = values.VALUE_TYPES.get(self.cls)  # None for nested records
        registry[short_name(self.fullname)] = self
        attributes = set(self.cls.__struct_fields__)
        self._to: list[tuple[str, str, Convert | None]] = []
        self._from: list[tuple[str, Convert | None]] = []
        for field in schema["fields"]:
            attribute = snake_case(field["name"])
            if attribute not in attributes:
                raise TypeError(
                    f"{self.cls.__name__} has no attribute for Avro field {field['name']}"
                )
            to_avro, from_avro = _converters(field["type"], registry)
            self._to.append((field["name"], attribute, to_avro))
            self._from.append((field["name"], from_avro))

        self.to_avro: Callable[[Any], dict[str, Any]] = self._compile_to()
        self.from_avro: Callable[[dict[str, Any]], Any] = self._compile_from()

    # Straight-line functions generated once per record type: the per-record path then has no
    # loop, no per-field branch and no attribute lookups beyond the fields themselves.

    def _compile_to(self) -> Callable[[Any], dict[str, Any]]:
        scope: dict[str, Any] = {}
        items = []
        for i, (name, attribute, convert) in enumerate(self._to):
            expr = f"v.{attribute}"
            if convert is not None:
                scope[f"c{i}"] = convert
                expr = f"c{i}({expr})"
            items.append(f"{name!r}: {expr}")
        source = f"def to_avro(v):\n    return {{{', '.join(items)}}}\n"
        exec(source, scope)  # source built from the schema's field names only
        return scope["to_avro"]  # type: ignore[no-any-return]

    def _compile_from(self) -> Callable[[dict[str, Any]], Any]:
        scope: dict[str, Any] = {"cls": self.cls}
        args = []
        for i, (name, convert) in enumerate(self._from):
            expr = f"d[{name!r}]"
            if convert is not None:
                scope[f"c{i}"] = convert
                expr = f"c{i}({expr})"
            args.append(expr)
        source = f"def from_avro(d):\n    return cls({', '.join(args)})\n"
        exec(source, scope)  # source built from the schema's field names only
        return scope["from_avro"]  # type: ignore[no-any-return]


def _converters(
    avro_type: Any, registry: dict[str, RecordConverter]
) -> tuple[Convert | None, Convert | None]:
    if isinstance(avro_type, str):
        if short_name(avro_type) in registry:  # a reference to a named record
            converter = registry[short_name(avro_type)]
            return converter.to_avro, converter.from_avro
        if avro_type == "int":
            return check_int32, None
        return None, None
    if isinstance(avro_type, list):
        return None, None  # unions are handled by the envelope codec
    kind = avro_type["type"]
    if kind == "enum":
        enum_cls = _ENUMS[short_name(avro_type["name"])]
        names = {member: member.name for member in enum_cls}
        return names.__getitem__, enum_cls.__getitem__
    if kind == "record":
        converter = RecordConverter(avro_type, registry)
        return converter.to_avro, converter.from_avro
    if kind == "array":
        to_item, from_item = _converters(avro_type["items"], registry)
        if to_item is None:
            return list, tuple
        return (
            lambda items: [to_item(i) for i in items],
            lambda items: tuple([from_item(i) for i in items]),  # type: ignore[misc]
        )
    if kind == "map":
        return dict, dict
    return None, None  # primitives written as {"type": "long"}


INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def check_int32(value: Any) -> Any:
    """Avro `int` fields are 32-bit; fastavro would write larger numbers that Java cannot read."""
    if isinstance(value, int) and not INT32_MIN <= value <= INT32_MAX:
        raise EncodeError(f"{value} does not fit an Avro int (32-bit)")
    return value
