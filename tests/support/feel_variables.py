"""The variables the FEEL tests evaluate expressions against."""

from __future__ import annotations

VARIABLES = {
    "order": {"total": 99.5, "items": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 5}]},
    "x": 7,
    "name": "Ada",
    "flags": [True, False],
    "nothing": None,
}
