"""Compact, deterministic value encodings with a version byte.

A value is `version byte + JSON` (no spaces, sorted dict keys, UTF-8), so equal state gives
equal bytes (the state digest relies on it). Dataclass values are stored as the list of their
fields in declaration order; a value written by an older version with fewer fields decodes with
the new fields' defaults, which is how values evolve: append fields with defaults, and bump the
version only for a change that needs an explicit upgrade.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from types import NoneType, UnionType
from typing import Any, Generic, TypeVar

from engine.state.errors import EncodingError

V = TypeVar("V")
_Convert = Callable[[Any], Any]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode
_loads = json.JSONDecoder().decode


class ValueCodec(Generic[V]):
    """Encodes values of one type: `version byte + JSON`."""

    def __init__(self, value_type: Any, version: int = 1) -> None:
        if not 0 <= version <= 255:
            raise ValueError("version must fit one byte")
        self.value_type = value_type
        self.version = version
        self._prefix = bytes([version])
        self._to, self._from = _converters(value_type)

    def encode(self, value: V) -> bytes:
        try:
            return self._prefix + _dumps(self._to(value)).encode("utf-8")
        except (TypeError, ValueError, AttributeError) as exc:
            raise EncodingError(f"cannot encode {value!r} as {self}: {exc}") from None

    def decode(self, data: bytes) -> V:
        if not data or data[0] != self.version:
            found = data[0] if data else None
            raise EncodingError(f"{self} expects value version {self.version}, found {found}")
        value: V = self._from(_loads(data[1:].decode("utf-8")))
        return value

    def __repr__(self) -> str:
        name = getattr(self.value_type, "__name__", str(self.value_type))
        return f"ValueCodec({name} v{self.version})"


def _identity(value: Any) -> Any:
    return value


def _converters(tp: Any) -> tuple[_Convert, _Convert]:
    if tp in (int, str, bool, float, NoneType, Any):
        return _identity, _identity
    if tp is bytes:
        return (
            lambda b: base64.b64encode(b).decode("ascii"),
            base64.b64decode,
        )
    if isinstance(tp, type) and issubclass(tp, Enum):
        enum_cls = tp
        return (lambda m: m.name), (lambda n: enum_cls[n])
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass_converters(tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (UnionType, typing.Union):
        members = [a for a in args if a is not NoneType]
        if len(members) != 1:
            raise TypeError(f"only `X | None` unions are storable, not {tp}")
        to_item, from_item = _converters(members[0])
        return (
            lambda v: None if v is None else to_item(v),
            lambda v: None if v is None else from_item(v),
        )
    if origin in (tuple, list):
        to_item, from_item = _converters(args[0])
        build = tuple if origin is tuple else list
        return (lambda v: [to_item(i) for i in v]), (lambda v: build(from_item(i) for i in v))
    if origin in (dict, Mapping):
        to_item, from_item = _converters(args[1])
        return (
            lambda v: {k: to_item(i) for k, i in v.items()},
            lambda v: {k: from_item(i) for k, i in v.items()},
        )
    raise TypeError(f"no storable encoding for {tp!r}")


def _dataclass_converters(cls: type[Any]) -> tuple[_Convert, _Convert]:
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    converters = [_converters(hints[f.name]) for f in fields]
    defaults = [
        f.default if f.default is not dataclasses.MISSING else dataclasses.MISSING for f in fields
    ]

    def to_list(value: Any) -> list[Any]:
        return [conv[0](getattr(value, name)) for name, conv in zip(names, converters, strict=True)]

    def from_list(items: list[Any]) -> Any:
        values = [conv[1](item) for item, conv in zip(items, converters, strict=False)]
        for missing in range(len(values), len(fields)):  # written by an older version
            if defaults[missing] is dataclasses.MISSING:
                raise EncodingError(f"{cls.__name__}.{names[missing]} missing and has no default")
            values.append(defaults[missing])
        return cls(*values)

    return to_list, from_list
