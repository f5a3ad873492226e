"""`partita bench gateway --rounds`: the paths' order is reversed every other round, and each
figure printed is the median over the rounds, the ratios to native being each round's own; each
gateway path's CPU per instance is set beside the floor of its requests."""

from __future__ import annotations

from typing import Any

from partita.bench.gateway import medians, round_order, with_floor, with_ratios


def _round(
    native_p50: float, grpc_p50: float, grpc_rate: float, gateway_cpu: float = 40.0
) -> dict[str, Any]:
    def figures(p50: float, rate: float) -> dict[str, Any]:
        return {
            "saturation": {"instances_per_s": rate},
            "fixed_rate": {
                "latency_ms_p50": p50,
                "latency_ms_p99": 2 * p50,
                "gateway": {"cpu_percent": gateway_cpu},
            },
        }

    return with_ratios(
        {"native": figures(native_p50, 1000.0), "grpc": figures(grpc_p50, grpc_rate)}
    )


def test_every_other_round_runs_the_paths_in_reverse() -> None:
    paths = ("native", "grpc", "rest")
    assert [round_order(paths, n) for n in range(3)] == [
        ("native", "grpc", "rest"),
        ("rest", "grpc", "native"),
        ("native", "grpc", "rest"),
    ]


def test_a_round_gives_each_gateway_path_its_ratio_to_native() -> None:
    result = _round(20.0, 30.0, 400.0)
    assert "vs_native" not in result["native"]
    assert result["grpc"]["vs_native"] == {"p50": 1.5, "p99": 1.5}


def test_the_medians_take_each_rounds_own_ratio() -> None:
    # round by round 1.5x, 1.0x and 3.0x: the median ratio is 1.5x, not the ratio of the
    # median latencies (30 / 20)
    rounds = [_round(20.0, 30.0, 400.0), _round(40.0, 40.0, 500.0), _round(10.0, 30.0, 300.0)]
    out = medians(rounds)
    assert out["grpc"]["vs_native"] == {"p50": 1.5, "p99": 1.5}
    assert out["grpc"]["fixed_rate"] == {
        "latency_ms_p50": 30.0,
        "latency_ms_p99": 60.0,
        "gateway": {"cpu_percent": 40.0},
    }
    assert out["grpc"]["saturation"] == {"instances_per_s": 400.0}
    assert out["native"]["fixed_rate"]["latency_ms_p50"] == 20.0
    assert "vs_native" not in out["native"]
    assert [r["vs_native"]["p50"] for r in out["grpc"]["rounds"]] == [1.5, 1.0, 3.0]


def test_the_gateways_cpu_per_instance_stands_beside_the_floor_of_its_requests() -> None:
    rounds = [
        with_floor(_round(20.0, 30.0, 400.0, cpu), {"grpc": {"server_cpu_us_per_request": us}}, 200)
        for cpu, us in ((44.0, 450), (50.0, 700), (40.0, 400))
    ]
    # round 1: 44 % of a core at 200 instances/s is 2.2 ms each; three calls of 450 us, 1.35 ms
    assert rounds[0]["grpc"]["gateway_cpu"] == {
        "ms_per_instance": 2.2,
        "requests_per_instance": 3,
        "floor_ms_per_instance": 1.35,
    }
    assert "gateway_cpu" not in rounds[0]["native"]
    out = medians(rounds)  # each the median of the rounds' own
    assert out["grpc"]["gateway_cpu"] == {
        "ms_per_instance": 2.2,
        "requests_per_instance": 3,
        "floor_ms_per_instance": 1.35,
    }
