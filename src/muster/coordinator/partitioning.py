"""Group -> `__consumer_offsets` partition, exactly as Kafka computes it."""

from functools import lru_cache


@lru_cache(maxsize=1 << 16)  # a loop over the id's UTF-16 units, asked on every group request
def java_string_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, 32-bit signed wrap."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: Integer.MIN_VALUE maps to 0, not to itself."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % num_partitions
