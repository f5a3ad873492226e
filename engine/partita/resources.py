"""Where the contract files live: `avro/` (record schemas) and `topics/` (topic specs).

They sit at the top of the repository because they are the product's public contract, read by
producers in other languages too. `engine/partita/_contract/avro` and
`engine/partita/_contract/topics` are links to them, so a checkout and an editable install read
them in place, and a built wheel (or sdist) carries copies of the linked files at the same
package path (pyproject.toml's package-data).
"""

from __future__ import annotations

from pathlib import Path

from partita.errors import PartitaError

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE_DIR.parent


class ContractFilesMissingError(PartitaError, FileNotFoundError):
    """The install lacks a contract folder; the message names the places looked at."""


def contract_dir(name: str) -> Path:
    """The folder `avro` or `topics`; raises ContractFilesMissingError when neither place has it.

    The package's own copy comes first: an installed package must never pick up a same-named
    folder beside it in site-packages (the Apache Avro library installs one called `avro`). The
    repository root is the fallback only in a checkout whose links were not made (git with
    symlinks off).
    """
    packaged = _PACKAGE_DIR / "_contract" / name
    if packaged.is_dir():
        return packaged.resolve()
    in_checkout = _CHECKOUT / name
    if (_CHECKOUT / "pyproject.toml").is_file() and in_checkout.is_dir():
        return in_checkout
    raise ContractFilesMissingError(
        f"contract folder {name!r} not found at {packaged} (the installed package's copy)"
        f" or {in_checkout} (a source checkout): this install of Partita is incomplete;"
        " reinstall it from a wheel or sdist built from the repository"
    )
