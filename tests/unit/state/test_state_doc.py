"""docs/internals/state.md is the table the column family declarations give, so it cannot drift."""

from __future__ import annotations

from partita.state.columns import ColumnFamilies
from partita.state.state_doc import render
from tests.support.paths import ROOT


def test_docs_state_md_is_current() -> None:
    committed = (ROOT / "docs" / "internals" / "state.md").read_text()
    assert committed == render(), (
        "docs/internals/state.md is stale: run"
        " `python -m partita.state.state_doc > docs/internals/state.md`"
    )


def test_every_column_family_says_what_it_maps() -> None:
    undocumented = [d.name for d in ColumnFamilies.all() if not d.doc]
    assert not undocumented, f"column families without doc=: {undocumented}"
