"""A straight-line Avro binary decoder generated from the current schema (the read side of the
hot path: every command the engine processes and every event it replays is decoded here).

One function per record type reads its fields in schema order from a `bytes` buffer and builds
the value dataclass directly, with no intermediate dict; one-byte varints are decoded inline.
The envelope function returns its fields as a tuple, leaving validation to the codec. Any
malformed input raises an ordinary exception (IndexError, ValueError, UnicodeDecodeError, ...)
that the codec turns into a typed `MalformedBodyError`. Records written with older schema
versions are not handled here: the codec resolves them with fastavro.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from msgspec import Struct

from partita.protocol import enums, values
from partita.protocol.convert import snake_case


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at `pos`; returns (value, next position). Unrolled: keys take eight
    bytes, and a loop costs a fifth more."""
    b = buf[pos]
    n = b & 0x7F
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 1
    b = buf[pos + 1]
    n |= (b & 0x7F) << 7
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 2
    b = buf[pos + 2]
    n |= (b & 0x7F) << 14
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 3
    b = buf[pos + 3]
    n |= (b & 0x7F) << 21
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 4
    b = buf[pos + 4]
    n |= (b & 0x7F) << 28
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 5
    b = buf[pos + 5]
    n |= (b & 0x7F) << 35
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 6
    b = buf[pos + 6]
    n |= (b & 0x7F) << 42
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 7
    b = buf[pos + 7]
    n |= (b & 0x7F) << 49
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 8
    b = buf[pos + 8]
    n |= (b & 0x7F) << 56
    if not b & 0x80:
        return (n >> 1) ^ -(n & 1), pos + 9
    b = buf[pos + 9]
    if b > 1:  # the tenth byte holds bit 63 only
        raise ValueError(f"varint at {pos} overflows 64 bits")
    n |= b << 63
    return (n >> 1) ^ -(n & 1), pos + 10


def read_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = read_long(buf, pos)
    end = pos + size
    if size < 0 or end > len(buf):
        raise ValueError(f"bytes of length {size} at {pos} overrun the record")
    return buf[pos:end], end


def read_text(buf: bytes, pos: int) -> tuple[str, int]:
    raw, pos = read_bytes(buf, pos)
    return raw.decode("utf-8"), pos


def read_count(buf: bytes, pos: int) -> tuple[int, int]:
    """An array/map block count (a negative count is followed by the block's byte size)."""
    count, pos = read_long(buf, pos)
    if count < 0:
        _, pos = read_long(buf, pos)
        count = -count
    return count, pos


ENUM_CLASSES: dict[str, type[Enum]] = {
    cls.__name__: cls
    for cls in vars(enums).values()
    if isinstance(cls, type) and issubclass(cls, Enum) and cls is not Enum
}
VALUE_CLASSES: dict[str, type[Any]] = {
    name: cls
    for name, cls in vars(values).items()
    if isinstance(cls, type) and issubclass(cls, Struct) and cls is not Struct
}


def short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class _Generator:
    def __init__(self) -> None:
        self.scope: dict[str, Any] = {
            "read_long": read_long,
            "read_bytes": read_bytes,
            "read_text": read_text,
            "read_count": read_count,
        }
        self.records: dict[str, str] = {}
        self.sources: list[str] = []
        self.counter = 0

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def record(self, schema: dict[str, Any], *, as_tuple: bool = False) -> str:
        name = short(schema["name"])
        if name in self.records:
            return self.records[name]
        function = f"dec_{name}"
        self.records[name] = function
        lines = [f"def {function}(buf, pos):"]
        names = []
        for field in schema["fields"]:
            target = f"f_{snake_case(field['name'])}"
            names.append(target)
            lines += self.read(target, field["type"], "    ", enum_names=as_tuple)
        if as_tuple:
            lines.append(f"    return ({', '.join(names)},), pos")
        else:
            cls = self._name("cls")
            self.scope[cls] = VALUE_CLASSES[name]
            lines.append(f"    return {cls}({', '.join(names)}), pos")
        self.sources.append("\n".join(lines) + "\n")
        return function

    def read(
        self, target: str, avro_type: Any, indent: str, *, enum_names: bool = False
    ) -> list[str]:
        if isinstance(avro_type, str):
            if avro_type in ("long", "int"):
                return [
                    f"{indent}b = buf[pos]",
                    f"{indent}if b < 0x80:",
                    f"{indent}    {target} = (b >> 1) ^ -(b & 1)",
                    f"{indent}    pos += 1",
                    f"{indent}else:",
                    f"{indent}    {target}, pos = read_long(buf, pos)",
                ]
            if avro_type in ("string", "bytes"):
                size, end = self._name("size"), self._name("end")
                convert = ".decode()" if avro_type == "string" else ""
                return [
                    *self.read(size, "long", indent),
                    f"{indent}{end} = pos + {size}",
                    f"{indent}if {size} < 0 or {end} > len(buf):",
                    f"{indent}    raise ValueError('string or bytes overrun the record')",
                    f"{indent}{target} = buf[pos:{end}]{convert}",
                    f"{indent}pos = {end}",
                ]
            simple = {"null": f"{target} = None"}.get(avro_type)
            if simple is not None:
                return [indent + simple]
            if avro_type == "boolean":
                return [
                    f"{indent}{target} = buf[pos] == 1",
                    f"{indent}if buf[pos] > 1:",
                    f"{indent}    raise ValueError('invalid boolean byte')",
                    f"{indent}pos += 1",
                ]
            return [f"{indent}{target}, pos = {self.records[short(avro_type)]}(buf, pos)"]
        if isinstance(avro_type, list):
            return self.union(target, avro_type, indent, enum_names)
        kind = avro_type["type"]
        if kind == "record":
            return [f"{indent}{target}, pos = {self.record(avro_type)}(buf, pos)"]
        if kind == "enum":
            table = self._name("symbols")
            enum = ENUM_CLASSES.get(short(avro_type["name"]))
            if enum_names or enum is None:
                self.scope[table] = tuple(avro_type["symbols"])
            else:
                self.scope[table] = tuple(enum[s] for s in avro_type["symbols"])
            index = self._name("index")
            return [
                *self.read(index, "long", indent),
                f"{indent}if {index} < 0:",
                f"{indent}    raise IndexError('negative enum index')",
                f"{indent}{target} = {table}[{index}]",
            ]
        if kind in ("array", "map"):
            count, item = self._name("count"), self._name("item")
            lines = [f"{indent}{target} = {'[]' if kind == 'array' else '{}'}"]
            lines += [f"{indent}while True:", f"{indent}    {count}, pos = read_count(buf, pos)"]
            lines += [f"{indent}    if not {count}:", f"{indent}        break"]
            lines += [f"{indent}    for _ in range({count}):"]
            inner = indent + "        "
            if kind == "array":
                lines += self.read(item, avro_type["items"], inner)
                lines.append(f"{inner}{target}.append({item})")
                lines.append(f"{indent}{target} = tuple({target})")  # after the loop
            else:
                key = self._name("key")
                lines.append(f"{inner}{key}, pos = read_text(buf, pos)")
                lines += self.read(item, avro_type["values"], inner)
                lines.append(f"{inner}{target}[{key}] = {item}")
            return lines
        return self.read(target, kind, indent, enum_names=enum_names)

    def union(self, target: str, branches: list[Any], indent: str, enum_names: bool) -> list[str]:
        index = self._name("branch")
        lines = self.read(index, "long", indent)
        if len(branches) == 2 and branches[0] == "null":
            lines += [f"{indent}if {index} == 0:", f"{indent}    {target} = None"]
            lines += [f"{indent}elif {index} == 1:"]
            lines += self.read(target, branches[1], indent + "    ", enum_names=enum_names)
            lines += [
                f"{indent}else:",
                f"{indent}    raise IndexError('union branch out of range')",
            ]
            return lines
        table = self._name("readers")
        readers = []
        for branch in branches:
            name = short(branch["name"] if isinstance(branch, dict) else branch)
            function = self.record(branch) if isinstance(branch, dict) else self.records[name]
            readers.append((branch["name"] if isinstance(branch, dict) else branch, function))
        self.scope[table] = readers  # (Avro name, function name): resolved after exec
        self.unions.append(table)
        name, reader, inner = self._name("name"), self._name("reader"), self._name("inner")
        return [
            *lines,
            f"{indent}if {index} < 0:",
            f"{indent}    raise IndexError('negative union branch')",
            f"{indent}{name}, {reader} = {table}[{index}]",
            f"{indent}{inner}, pos = {reader}(buf, pos)",
            f"{indent}{target} = ({name}, {inner})",
        ]

    unions: list[str]


def compile_decoder(schema: dict[str, Any]) -> Callable[[bytes, int], tuple[tuple[Any, ...], int]]:
    """A decoder of the envelope `schema`: (buffer, start) -> (fields in schema order, end).
    Enum fields of the envelope come back as symbols; the value as (Avro name, dataclass)."""
    generator = _Generator()
    generator.unions = []
    top = generator.record(schema, as_tuple=True)
    source = "\n".join(generator.sources)
    exec(compile(source, f"<avro decoder {schema['name']}>", "exec"), generator.scope)
    for table in generator.unions:
        generator.scope[table] = tuple(
            (name, generator.scope[function]) for name, function in generator.scope[table]
        )
    decode: Callable[[bytes, int], tuple[tuple[Any, ...], int]] = generator.scope[top]
    return decode
