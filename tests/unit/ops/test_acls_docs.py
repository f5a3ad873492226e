"""docs/security.md shows the ACLs `partita acls` prints, generated from
engine/partita/ops/acls.py."""

from __future__ import annotations

from partita.config import KafkaRole
from partita.ops.acls import DOCS_BEGIN, DOCS_END, update_docs
from tests.support.paths import ROOT

DOCS = ROOT / "docs" / "security.md"


def test_the_acls_in_docs_security_md_are_generated_from_the_code() -> None:
    committed = DOCS.read_text()
    assert update_docs(committed) == committed, (
        "docs/security.md is stale: run `python -m partita.ops.acls docs/security.md`"
    )


def test_the_generated_section_lists_every_role_as_a_table_and_as_commands() -> None:
    section = DOCS.read_text().split(DOCS_BEGIN)[1].split(DOCS_END)[0]
    for role in KafkaRole:
        assert f"\n### {role}\n" in section
        assert f"--allow-principal User:{role} " in section
    assert "\n### job-worker --job-type charge-card\n" in section
