"""Snapshot file names are checked before anything is written: only relative names that stay
inside the target folder pass, and a refusal names the snapshot, the name and the reason."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from partita.snapshots.store import SnapshotError, checked_name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("../evil", "has a '..' component"),
        ("a/../../evil", "has a '..' component"),
        ("..", "has a '..' component"),
        ("/etc/x", "is an absolute path"),
        ("//etc/x", "is an absolute path"),
        ("", "is empty"),
        ("a\0b", "contains a NUL character"),
        ("a\\..\\evil", "contains a backslash"),
        ("a//b", "has an empty or '.' component"),
        ("./a", "has an empty or '.' component"),
        ("a/", "has an empty or '.' component"),
    ],
)
def test_unsafe_names_are_refused_naming_why(name: str, why: str) -> None:
    with pytest.raises(SnapshotError) as raised:
        checked_name("s-1", name)
    assert str(raised.value) == f"snapshot s-1: file name {name!r} {why}"


@pytest.mark.parametrize("name", ["CURRENT", "000012.sst", "sub/dir/OPTIONS-000007", "a..b"])
def test_the_names_of_a_checkpoint_pass(name: str, tmp_path: Path) -> None:
    path = checked_name("s-1", name)
    assert path == PurePosixPath(name)
    assert (tmp_path / path).resolve().is_relative_to(tmp_path.resolve())
