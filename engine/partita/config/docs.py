"""docs/configuration.md's tables of settings, generated from `partita.config.settings`.

    python -m partita.config.docs docs/configuration.md

rewrites the part of the page between its BEGIN and END markers; the prose around it is the
page's own. A test fails when the page and the table disagree.
"""

from __future__ import annotations

import sys
from itertools import groupby
from pathlib import Path

from partita.config.settings import SETTINGS, Setting

BEGIN = (
    "<!-- generated from engine/partita/config/settings.py by"
    " `python -m partita.config.docs docs/configuration.md`; edit the table there -->"
)
END = "<!-- end of the generated settings -->"


def _default(setting: Setting[object]) -> str:
    if setting.shown_default is not None:
        return setting.shown_default
    return f"`{setting.default_text}`" if setting.default_text else "unset"


def _row(setting: Setting[object]) -> str:
    flag = f"`{setting.flag}`" if setting.flag else ""
    cells = (f"`{setting.env}`", flag, _default(setting), setting.readers, setting.help)
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def render() -> str:
    """The generated section, markers included."""
    lines = [BEGIN]
    for section, settings in groupby(SETTINGS, key=lambda setting: setting.section):
        lines += [
            "",
            f"### {section}",
            "",
            "| variable | flag | default | read by | what |",
            "|---|---|---|---|---|",
        ]
        lines += [_row(setting) for setting in settings]
    lines += ["", END]
    return "\n".join(lines)


def rewrite(page: str) -> str:
    """`page` with its generated section replaced by `render()`; ValueError without markers."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no generated section: add {BEGIN!r} ... {END!r}")
    return page[:start] + render() + page[end + len(END) :]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m partita.config.docs docs/configuration.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    path.write_text(rewrite(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
