"""A mergeable histogram of non-negative values (durations in milliseconds) with log buckets.

Bucket `i` holds the values in `(GROWTH**(i-1), GROWTH**i]`; zero has a bucket of its own. A
percentile is the nearest-rank percentile of the recorded values, estimated by the midpoint of
the bucket it falls in and clamped to the recorded minimum and maximum, so the estimate is
within `RELATIVE_ERROR` of the exact nearest-rank value. Two histograms merge by adding bucket
counts, which is how per-partition figures combine into one. The size is bounded by the range of
the values (about 8 buckets per doubling), never by how many values were recorded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

BUCKETS_PER_DOUBLING = 8
GROWTH: float = 2.0 ** (1.0 / BUCKETS_PER_DOUBLING)
RELATIVE_ERROR = (GROWTH - 1.0) / (GROWTH + 1.0)
"""Upper bound of |estimate - exact| / exact for any percentile (about 4.3 %)."""

_LOG_GROWTH = math.log(GROWTH)


def bucket_of(value: float) -> int | None:
    """The bucket index of a positive `value`; None for zero (and negatives, treated as zero)."""
    if value <= 0:
        return None
    index = math.ceil(math.log(value) / _LOG_GROWTH)
    # guard the float edge: keep value in (GROWTH**(index-1), GROWTH**index]
    if math.pow(GROWTH, index) < value:
        index += 1
    elif math.pow(GROWTH, index - 1) >= value:
        index -= 1
    return index


def bucket_midpoint(index: int) -> float:
    """The value that minimises the worst relative error over bucket `index`."""
    upper = math.pow(GROWTH, index)
    return 2.0 * upper / (GROWTH + 1.0)


@dataclass(slots=True)
class Histogram:
    """Counts of values per log bucket, plus count, sum, minimum and maximum.

    Mutable on purpose (it is folded event by event); `to_json` / `from_json` give the plain
    form stored in a table, which never holds the values themselves.
    """

    buckets: dict[int, int] = field(default_factory=dict)
    zeros: int = 0
    count: int = 0
    total: float = 0.0
    low: float | None = None
    high: float | None = None

    def add(self, value: float, times: int = 1) -> None:
        """Record `value` (negatives count as 0) `times` times."""
        value = max(0.0, float(value))
        index = bucket_of(value)
        if index is None:
            self.zeros += times
        else:
            self.buckets[index] = self.buckets.get(index, 0) + times
        self.count += times
        self.total += value * times
        self.low = value if self.low is None else min(self.low, value)
        self.high = value if self.high is None else max(self.high, value)

    def merge(self, other: Histogram) -> Histogram:
        """Add `other`'s counts to this histogram; returns self."""
        for index, n in other.buckets.items():
            self.buckets[index] = self.buckets.get(index, 0) + n
        self.zeros += other.zeros
        self.count += other.count
        self.total += other.total
        if other.low is not None:
            self.low = other.low if self.low is None else min(self.low, other.low)
        if other.high is not None:
            self.high = other.high if self.high is None else max(self.high, other.high)
        return self

    @classmethod
    def merged(cls, histograms: Iterable[Histogram]) -> Histogram:
        result = cls()
        for histogram in histograms:
            result.merge(histogram)
        return result

    def percentile(self, q: float) -> float | None:
        """The nearest-rank `q`-th percentile (0 < q <= 100), estimated; None when empty."""
        if not 0 < q <= 100:
            raise ValueError(f"percentile must be in (0, 100], got {q}")
        if self.count == 0:
            return None
        rank = max(1, math.ceil(q / 100.0 * self.count))
        if rank <= self.zeros:
            return 0.0
        seen = self.zeros
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                return self._clamp(bucket_midpoint(index))
        return self.high  # unreachable while counts are consistent

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def summary(self, digits: int = 1) -> dict[str, float | int | None]:
        """count, p50, p95, p99, mean, min, max, rounded for display."""

        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, digits)

        return {
            "count": self.count,
            "p50": rounded(self.percentile(50)),
            "p95": rounded(self.percentile(95)),
            "p99": rounded(self.percentile(99)),
            "mean": rounded(self.mean),
            "min": rounded(self.low),
            "max": rounded(self.high),
        }

    def _clamp(self, value: float) -> float:
        if self.low is not None and value < self.low:
            return self.low
        if self.high is not None and value > self.high:
            return self.high
        return value

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (bucket indexes as string keys)."""
        return {
            "b": {str(index): n for index, n in self.buckets.items()},
            "z": self.zeros,
            "n": self.count,
            "sum": self.total,
            "min": self.low,
            "max": self.high,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Histogram:
        """The inverse of `to_json`; an empty histogram for None."""
        if not data:
            return cls()
        return cls(
            buckets={int(index): int(n) for index, n in data.get("b", {}).items()},
            zeros=int(data.get("z", 0)),
            count=int(data.get("n", 0)),
            total=float(data.get("sum", 0.0)),
            low=data.get("min"),
            high=data.get("max"),
        )
