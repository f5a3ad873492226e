"""The benchmark commands run and print one JSON line with their figures (no timing asserts)."""

from __future__ import annotations

import json

import pytest

from engine.cli import main


def test_bench_codec_prints_encode_and_decode_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "codec", "--rounds", "3", "--batch", "50"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    assert set(figures["encode_us"]) == set(figures["decode_us"]) == {"job", "process_instance"}
    assert all(v > 0 for v in figures["encode_us"].values())


def test_bench_state_prints_store_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "state", "--operations", "20000"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    for name in ("put_per_s", "get_per_s", "scan_items_per_s", "commits_per_s_1000_ops"):
        assert figures[name] > 0, name
