"""`partita bench gateway`'s flags: `--paths` offers exactly the paths the bench measures (the
CLI writes them out so that --help does not import the bench); `--rounds` takes one or more;
`--slot` takes seconds from 0 (one path after another) to a minute."""

from __future__ import annotations

import pytest

from partita.bench.gateway import PATHS
from partita.cli import main
from partita.cli.bench_gateway import PATHS as CHOICES


def test_the_flag_offers_the_paths_the_bench_measures() -> None:
    assert CHOICES == PATHS


def test_rounds_below_one_are_refused_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "gateway", "--rounds", "0"]) == 1
    assert "--rounds takes a count of at least 1, not 0" in capsys.readouterr().err


@pytest.mark.parametrize("slot", ["-1", "61"])
def test_a_slot_out_of_range_is_refused_before_anything_starts(
    slot: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "gateway", "--slot", slot]) == 1
    assert "--slot takes seconds from 0 to 60 (0: one path after another)" in (
        capsys.readouterr().err
    )
