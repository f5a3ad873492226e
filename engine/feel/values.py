"""FEEL values <-> JSON values. Numbers are Decimals inside FEEL (0.1 + 0.2 = 0.3, as in
Zeebe); results become int when integral, float otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any


def from_json(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return Decimal(str(value))
    if isinstance(value, Mapping):
        return {str(k): from_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [from_json(v) for v in value]
    return value


def to_json(value: Any) -> Any:
    if isinstance(value, Decimal):
        if value == value.to_integral_value():
            return int(value)
        return float(value)
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, Decimal)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Decimal):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "context"
    return type(value).__name__
