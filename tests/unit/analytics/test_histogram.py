"""The mergeable log-bucket histogram: percentiles within the promised relative error of the
exact nearest-rank values, merging equals recording everything in one, bounded size."""

from __future__ import annotations

import json
import math
import random

import pytest

from partita.analytics.histogram import GROWTH, RELATIVE_ERROR, Histogram, bucket_of


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def histogram_of(values: list[float]) -> Histogram:
    histogram = Histogram()
    for value in values:
        histogram.add(value)
    return histogram


def test_an_empty_histogram_has_no_percentiles() -> None:
    histogram = Histogram()
    assert histogram.percentile(50) is None and histogram.mean is None
    assert histogram.summary() == {
        "count": 0,
        "p50": None,
        "p95": None,
        "p99": None,
        "mean": None,
        "min": None,
        "max": None,
    }


@pytest.mark.parametrize("q", [0, -1, 100.5])
def test_percentiles_outside_0_to_100_are_refused(q: float) -> None:
    with pytest.raises(ValueError, match="percentile"):
        Histogram().percentile(q)


def test_one_value_is_exact_and_zero_has_its_own_bucket() -> None:
    assert histogram_of([137.0]).percentile(99) == 137.0
    zeros = histogram_of([0, 0, 0, 5, -3])  # negatives count as zero
    assert zeros.percentile(80) == 0.0
    assert zeros.percentile(90) == pytest.approx(5.0, rel=RELATIVE_ERROR)
    assert zeros.zeros == 4 and zeros.low == 0.0 and zeros.high == 5.0


def test_bucket_boundaries_are_upper_inclusive() -> None:
    for k in (-5, 0, 1, 8, 57, 160):
        edge = GROWTH**k
        assert bucket_of(edge) == k
        assert bucket_of(edge * (1 + 1e-9)) == k + 1
    assert bucket_of(0) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_are_within_the_relative_error(seed: int) -> None:
    rng = random.Random(seed)
    values = [rng.lognormvariate(4, 1.5) for _ in range(5000)] + [
        float(rng.randint(0, 20)) for _ in range(500)
    ]
    histogram = histogram_of(values)
    assert histogram.count == len(values)
    assert histogram.mean == pytest.approx(sum(values) / len(values))
    for q in (1, 10, 50, 90, 95, 99, 99.9, 100):
        exact = nearest_rank(values, q)
        estimate = histogram.percentile(q)
        assert estimate is not None
        assert abs(estimate - exact) <= exact * RELATIVE_ERROR + 1e-9, (q, exact, estimate)


def test_merging_partitions_equals_recording_everything_in_one() -> None:
    rng = random.Random(7)
    values = [rng.expovariate(1 / 250) for _ in range(3000)]
    parts = [histogram_of(values[i::3]) for i in range(3)]
    merged = Histogram.merged(parts)
    whole = histogram_of(values)
    assert merged.buckets == whole.buckets and merged.count == whole.count
    assert (merged.low, merged.high) == (whole.low, whole.high)
    assert merged.total == pytest.approx(whole.total)
    for q in (50, 95, 99):
        assert merged.percentile(q) == whole.percentile(q)


def test_the_json_form_round_trips_through_json_text() -> None:
    histogram = histogram_of([0, 1, 2, 3, 250, 251, 9000])
    restored = Histogram.from_json(json.loads(json.dumps(histogram.to_json())))
    assert restored == histogram
    assert Histogram.from_json(None) == Histogram()


def test_the_size_depends_on_the_range_not_on_the_count() -> None:
    rng = random.Random(3)
    histogram = histogram_of([rng.uniform(1, 3_600_000) for _ in range(100_000)])
    assert len(histogram.buckets) <= math.ceil(math.log2(3_600_000) * 8) + 1
    assert len(json.dumps(histogram.to_json())) < 4000
