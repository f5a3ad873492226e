"""docs/state.md is the table the column family declarations give, so it cannot drift."""

from __future__ import annotations

from pathlib import Path

from partita.state.columns import ColumnFamilies
from partita.state.state_doc import render

ROOT = Path(__file__).resolve().parents[3]


def test_docs_state_md_is_current() -> None:
    committed = (ROOT / "docs" / "state.md").read_text()
    assert committed == render(), (
        "docs/state.md is stale: run `python -m partita.state.state_doc > docs/state.md`"
    )


def test_every_column_family_says_what_it_maps() -> None:
    undocumented = [d.name for d in ColumnFamilies.all() if not d.doc]
    assert not undocumented, f"column families without doc=: {undocumented}"
