"""The benchmark commands run and print one JSON line with their figures (no timing asserts)."""

from __future__ import annotations

import json

import pytest

from engine.bench.codec import typical_records
from engine.cli import main
from engine.protocol.codec import RecordCodec


def test_bench_codec_prints_encode_and_decode_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "codec", "--rounds", "3", "--batch", "50"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    assert set(figures["encode_us"]) == set(figures["decode_us"]) == {"job", "process_instance"}
    assert all(v > 0 for v in [*figures["encode_us"].values(), *figures["decode_us"].values()])
    # the sizes it reports are those of the very records it timed, encoded as the log holds them
    codec = RecordCodec()
    assert figures["bytes"] == {n: len(codec.encode(r)) for n, r in typical_records().items()}
    assert (figures["rounds"], figures["batch"]) == (3, 50)


def test_bench_state_prints_store_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "state", "--operations", "20000"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    for name in ("put_per_s", "get_per_s", "scan_items_per_s", "commits_per_s_1000_ops"):
        assert figures[name] > 0, name


def test_compared_e2e_runs_give_medians_and_ratios_per_configuration() -> None:
    from pathlib import Path

    from engine.bench.e2e import side_by_side
    from engine.config import Config

    def result(rate: float, p99: float) -> dict[str, object]:
        return {
            "one-task": {
                "saturation": {"instances_per_s": rate, "engine_worker": {"cpu_percent": 90.0}},
                "fixed_rate": {
                    "latency_ms_p50": p99 / 3,
                    "latency_ms_p99": p99,
                    "engine_worker": {"cpu_percent": 40.0},
                },
                "replay": {"events_per_s": 40_000},
            }
        }

    secure = Config(kafka_config=Path("/x/admin.properties"), bootstrap_servers="h:9094")
    out = side_by_side(
        {
            "main": [result(900, 60), result(1000, 50), result(950, 70)],
            "compared": [result(800, 80), result(700, 90), result(750, 100)],
        },
        ["one-task"],
        {"main": Config(), "compared": secure},
    )
    assert out["medians"]["main"]["one-task"]["saturation_instances_per_s"] == 950
    assert out["medians"]["compared"]["one-task"]["fixed_rate_p99_ms"] == 90
    assert out["relative_to_main"]["compared"]["one-task"]["saturation_instances_per_s"] == 0.789
    assert out["configurations"] == {
        "main": "plaintext",
        "compared": {"PARTITA_KAFKA_CONFIG": "/x/admin.properties"},
    }
