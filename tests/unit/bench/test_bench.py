"""The benchmark commands run and print one JSON line with their figures (no timing asserts):
figures consistent with the work the command did, within the time it took."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pytest

from partita.bench import e2e
from partita.bench.codec import typical_documents, typical_records
from partita.bench.e2e import side_by_side
from partita.cli import main
from partita.config import Config
from partita.protocol.codec import RecordCodec


def test_bench_codec_prints_encode_and_decode_figures(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()
    assert main(["bench", "codec", "--rounds", "3", "--batch", "50"]) == 0
    elapsed_us = (time.perf_counter() - started) * 1e6
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    assert set(figures["encode_us"]) == set(figures["decode_us"]) == {"job", "process_instance"}
    per_call = [*figures["encode_us"].values(), *figures["decode_us"].values()]
    pure = ("encode_us_pure_python", "decode_us_pure_python")
    if RecordCodec().native:  # the pure-Python codec is timed beside the compiled one
        assert figures["codec"] == "compiled"
        for name in pure:
            assert set(figures[name]) == {"job", "process_instance"}
            per_call += figures[name].values()
    else:
        assert figures["codec"] == "pure-python"
        assert not set(pure) & set(figures)
    documents = figures["variables_json"]  # the engine's JSON beside the standard library's
    for name in ("read_us", "write_us", "read_us_stdlib", "write_us_stdlib"):
        assert set(documents[name]) == {"small", "1kb"}
        per_call += documents[name].values()
    assert documents["bytes"] == {n: len(t.encode()) for n, t in typical_documents().items()}
    assert all(v > 0 for v in per_call)
    # each figure is the median time of one call over 3 rounds of 50 calls: at least two rounds
    # of each took that long or longer, and all of them ran within the command's time
    assert sum(2 * 50 * v for v in per_call) <= elapsed_us, (figures, elapsed_us)
    # the sizes it reports are those of the very records it timed, encoded as the log holds them
    codec = RecordCodec()
    assert figures["bytes"] == {n: len(codec.encode(r)) for n, r in typical_records().items()}
    assert (figures["rounds"], figures["batch"]) == (3, 50)


def test_bench_state_prints_store_figures(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()
    assert main(["bench", "state", "--operations", "20000"]) == 0
    elapsed = time.perf_counter() - started
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    assert (figures["bench"], figures["operations"]) == ("state", 20000)
    rates = ("put_per_s", "get_per_s", "scan_items_per_s", "commits_per_s_1000_ops")
    for name in rates:
        assert figures[name] > 0 and math.isfinite(figures[name]), name
    # the work behind each rate: 20000 puts, 20000 gets, a scan of 20000 children (100 scopes
    # of 200) and 20 commits of 1000 puts each; timed phases that fit in the command's time
    work = {"put_per_s": 20000, "get_per_s": 20000, "scan_items_per_s": 20000}
    work["commits_per_s_1000_ops"] = 20
    timed = sum(work[name] / figures[name] for name in rates)
    assert timed <= elapsed * 1.01, (figures, elapsed)


def test_compared_e2e_runs_give_medians_and_ratios_per_configuration() -> None:
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


def test_compare_codec_runs_each_round_pure_python_then_compiled(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The environment every process of a round inherits says which codec it runs, and the
    printed document sets the two side by side; the variable is restored afterwards."""
    monkeypatch.setenv("PARTITA_NATIVE", "auto")
    seen: list[str] = []

    def fake_run(config: Config, **_: object) -> dict[str, object]:
        seen.append(os.environ["PARTITA_NATIVE"])
        rate = 500.0 if seen[-1] == "off" else 800.0
        return {
            "one-task": {
                "saturation": {"instances_per_s": rate, "engine_worker": {"cpu_percent": 90.0}},
                "fixed_rate": {
                    "latency_ms_p50": 20.0,
                    "latency_ms_p99": 60.0,
                    "engine_worker": {"cpu_percent": 40.0},
                },
                "replay": {"events_per_s": 40_000 if seen[-1] == "off" else 70_000},
            }
        }

    monkeypatch.setattr(e2e, "run", fake_run)
    argv = ["bench", "e2e", "--workload", "one-task", "--rounds", "2", "--compare-codec"]
    assert main(argv) == 0
    assert seen == ["off", "on", "off", "on"]
    assert os.environ["PARTITA_NATIVE"] == "auto"
    out = json.loads(capsys.readouterr().out)
    assert out["environments"] == {
        "pure-python": {"PARTITA_NATIVE": "off"},
        "compiled": {"PARTITA_NATIVE": "on"},
    }
    relative = out["relative_to_main"]["compiled"]["one-task"]
    assert relative["saturation_instances_per_s"] == 1.6
    assert relative["replay_events_per_s"] == 1.75


def test_compare_codec_goes_with_no_other_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "e2e", "--compare-codec", "--scaling"]) == 1
    assert "use one of --scaling, --compare-kafka-config and --compare-codec" in (
        capsys.readouterr().err
    )


def test_a_raw_loop_of_no_commands_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The engine's log rate is printed as a share of the raw loop's: it needs one command."""
    assert main(["bench", "e2e", "--baseline-commands", "0"]) == 1
    assert "--baseline-commands takes a count of at least 1, not 0" in capsys.readouterr().err


def test_bench_loop_rounds_report_the_median_and_every_round(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each round runs the engine and the raw loop in a namespace of its own; the printed
    figures are the rounds' medians, each round's ratio beside them."""
    from partita.bench import loop  # lazy: the bench module the test replaces a part of

    rates = iter([(100_000, 200_000), (150_000, 250_000), (120_000, 400_000)])
    namespaces = []

    def fake_run(config: Config, commands: int, *, keep_topics: bool) -> dict[str, object]:
        engine, raw = next(rates)
        namespaces.append(f"bench{len(namespaces)}")
        return {
            "bench": "loop",
            "commands": commands,
            "engine_records_per_s": engine,
            "raw_records_per_s": raw,
            "ratio": round(engine / raw, 3),
            "engine_commands_per_s": engine // 7,
            "namespace": namespaces[-1],
        }

    monkeypatch.setattr(loop, "run", fake_run)
    assert main(["bench", "loop", "--commands", "10", "--rounds", "3"]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert result["ratios"] == [0.5, 0.6, 0.3]
    assert result["ratio"] == 0.5
    assert result["engine_records_per_s"] == 120_000
    assert result["raw_records_per_s"] == 250_000
    assert result["namespaces"] == ["bench0", "bench1", "bench2"]
    assert "round 3/3: engine 120,000 records/s, raw 400,000 records/s, ratio 0.3" in out.err


def test_bench_loop_refuses_no_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "loop", "--rounds", "0"]) == 1
    assert "--rounds takes a count of at least 1, not 0" in capsys.readouterr().err


def test_bench_journey_refuses_no_producers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "journey", "--producers", "0"]) == 1
    assert "--producers takes a count of at least 1, not 0" in capsys.readouterr().err


class _FailingCommit:
    def __init__(self) -> None:
        self.committed = 0

    def commit_transaction(self, timeout: float) -> None:
        self.committed += 1
        raise RuntimeError("fenced")

    def poll(self, timeout: float) -> int:
        return 0


def test_the_relays_background_commit_hands_its_error_to_the_relay() -> None:
    from partita.bench.journey import _Committer

    committer, producer = _Committer(), _FailingCommit()
    committer.start(producer)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="fenced"):
        committer.wait()
    committer.wait()  # raised once: the committer is idle and clean again
    committer.start(producer)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="fenced"):
        committer.start(producer)  # type: ignore[arg-type]  # the next commit waits for it
    assert producer.committed == 2


def test_bench_cpu_prints_the_engines_time_per_command(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()
    assert main(["bench", "cpu", "--commands", "2000", "--batch", "400"]) == 0
    elapsed_us = (time.perf_counter() - started) * 1e6
    (line,) = capsys.readouterr().out.splitlines()
    figures = json.loads(line)
    assert (figures["bench"], figures["commands"], figures["batch"]) == ("cpu", 2000, 400)
    # every command was copied into the log and wrote its 5 events
    assert figures["records_produced"] == 2000 * 6
    # the copies of all but the first batches went to predicted positions
    assert 1 <= figures["batches_predicted"] <= 4
    # the timed batches (after 3 of warm-up) fit in the command's time
    assert 0 < figures["us_per_command_fastest_batch"] <= figures["us_per_command"]
    assert figures["cpu_us_per_command"] > 0
    assert 2 * 400 * figures["us_per_command"] <= elapsed_us


def test_bench_cpu_refuses_too_few_commands_for_its_batches(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "cpu", "--commands", "1000", "--batch", "400"]) == 1
    assert capsys.readouterr().err.strip() == (
        "partita: error: 1000 commands make fewer than 4 batches of 400: give at least 1600"
        " commands"
    )
