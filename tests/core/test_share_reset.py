"""`share.auto.offset.reset` values (`muster.share.reset`): latest,
earliest and KIP-1106's `by_duration:` with an ISO-8601 duration read as
Java's Duration.parse reads it; what Kafka 4.4 accepts and refuses
(kafka-diff share_groups.reset_configs asks it the same values)."""

from __future__ import annotations

import pytest

from muster.share.reset import check_reset, duration_ms, since_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H", 3_600_000),
        ("pt1h", 3_600_000),
        ("P2DT3H4M5.5S", ((2 * 24 + 3) * 60 + 4) * 60_000 + 5_500),
        ("PT0S", 0),
        ("P1D", 86_400_000),
        ("PT0.001S", 1),
        ("PT1,25S", 1_250),
        ("-PT1H", -3_600_000),
    ],
)
def test_durations(text: str, ms: int) -> None:
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["1H", "", "P", "PT", "P1Y", "P1M", "PT1H ", "PT1.5H"])
def test_not_durations(text: str) -> None:
    assert duration_ms(text) is None


def test_values_kafka_accepts_and_refuses() -> None:
    for ok in ("latest", "earliest", "by_duration:PT1H", "by_duration:PT0S", "by_duration:pt1h"):
        assert check_reset(ok), ok
    for bad in ("newest", "by_duration:-PT1H", "by_duration:1H", "by_duration:", "by_duration:P1Y"):
        assert not check_reset(bad), bad


def test_by_duration_looks_back_from_now() -> None:
    assert since_ms("by_duration:PT1M", now_ms=100_000) == 40_000
    assert since_ms("latest", now_ms=100_000) is None
    assert since_ms("earliest", now_ms=100_000) is None
