"""Every relative link of README.md and docs/**/*.md leads somewhere: the file exists, and an
anchor into a markdown page names one of its headings (as GitHub makes heading anchors)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import ROOT

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*```")
_HEADING = re.compile(r"^#{1,6}\s+(.*)")


def _unfenced(page: Path) -> list[tuple[int, str]]:
    lines, fenced = [], False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The heading anchors of `page`, repeated headings numbered as GitHub numbers them."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _unfenced(page):
        if match := _HEADING.match(line):
            slug = _slug(match.group(1))
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def broken_links(root: Path) -> list[str]:
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        for number, line in _unfenced(page):
            for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                target = match.group(1)
                if re.match(r"^[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                where = f"{page.relative_to(root)}:{number}: {target}"
                if not dest.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    broken.append(f"{where} (no heading #{anchor})")
    return broken


def test_every_relative_link_of_the_docs_leads_somewhere() -> None:
    assert broken_links(ROOT) == []


def test_the_check_sees_a_missing_page_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Two words\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#two-words) [gone](docs/b.md) [no](docs/a.md#three)\n"
        "```\n[in a fence](nowhere.md)\n```\n"
    )
    assert broken_links(tmp_path) == [
        "README.md:1: docs/b.md (no such file)",
        "README.md:1: docs/a.md#three (no heading #three)",
    ]
