"""The executor-side range reader on its own (no Spark): offsets the log does
not hold, failOnDataLoss either way."""

from __future__ import annotations

from typing import Any

import pytest

from muster.spark.fetch import DataLossError, FetchRange, read_range
from tests.spark.kafka import create_topic, produce, records


def _range(bootstrap: str, topic: str, start: int, end: int, fail: bool) -> FetchRange:
    return FetchRange(bootstrap, topic, 0, start, end, False, fail, 1 << 20, 10.0)


def test_offsets_out_of_range_fail_or_are_skipped(shared_muster: Any, topic: str) -> None:
    create_topic(shared_muster.bootstrap, topic, 1)
    produce(shared_muster.bootstrap, topic, records(5, 1))
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        list(read_range(_range(shared_muster.bootstrap, topic, 50, 60, fail=True)))
    assert list(read_range(_range(shared_muster.bootstrap, topic, 50, 60, fail=False))) == []
    batches = list(read_range(_range(shared_muster.bootstrap, topic, 1, 4, fail=True)))
    assert [o for b in batches for o in b.column("offset").to_pylist()] == [1, 2, 3]
