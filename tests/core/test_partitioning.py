from __future__ import annotations

from muster.coordinator import partition_for
from muster.coordinator.partitioning import java_string_hash, kafka_abs


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    # the classic string whose hashCode is Integer.MIN_VALUE
    assert java_string_hash("polygenelubricants") == -(2**31)
    # characters outside the BMP hash as two UTF-16 code units
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00


def test_partition_for_uses_kafka_abs() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("a", 1) == 0
    neg = "console-consumer"
    assert partition_for(neg, 50) == abs(java_string_hash(neg)) % 50
