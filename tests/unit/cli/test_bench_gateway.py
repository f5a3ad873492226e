"""`partita bench gateway --paths` offers exactly the paths the bench measures (the CLI writes
them out so that --help does not import the bench)."""

from __future__ import annotations

from partita.bench.gateway import PATHS
from partita.cli.bench_gateway import PATHS as CHOICES


def test_the_flag_offers_the_paths_the_bench_measures() -> None:
    assert CHOICES == PATHS
