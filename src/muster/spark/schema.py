"""The source's output schema, exactly Spark's Kafka source's, and the Arrow
schema Spark checks `read()`'s record batches against."""

from __future__ import annotations

from functools import cache

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def source_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


@cache
def arrow_schema(include_headers: bool) -> pa.Schema:
    """Spark compares with `pa.Schema.equals` (names, types, nullability), so take
    the schema from Spark's own converter: timestamps are timestamp[us, tz=UTC]."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(source_schema(include_headers), timezone="UTC")
