"""Where the contract files live: `avro/` (record schemas) and `topics/` (topic specs).

They sit at the top of the repository because they are the product's public contract, read by
producers in other languages too. From a checkout (editable install) they are read in place; an
installed wheel carries copies under `engine/_contract/`.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def contract_dir(name: str) -> Path:
    """The folder `avro` or `topics`; raises FileNotFoundError naming both places looked at."""
    in_checkout = _PACKAGE_DIR.parent / name
    packaged = _PACKAGE_DIR / "_contract" / name
    for candidate in (in_checkout, packaged):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"contract folder {name!r} not found at {in_checkout} or {packaged}")
