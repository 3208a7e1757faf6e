"""The `muster` Python data source: Spark's Kafka source and sink options and
schema on any Kafka-protocol broker, in pure Python.

Readers and writers are imported when asked for: Spark unpickles this class
in every planning worker (schema lookup included), and the Kafka client's
import costs about a second."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from muster.spark.options import parse_source
from muster.spark.schema import source_schema


class MusterDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "muster"

    def schema(self) -> StructType:
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return source_schema(include)

    def reader(self, schema: StructType) -> DataSourceReader:
        from muster.spark.source import BatchReader

        return BatchReader(parse_source(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from muster.spark.source import StreamReader

        return StreamReader(parse_source(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from muster.spark.sink import BatchWriter, parse_sink

        return BatchWriter(parse_sink(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from muster.spark.sink import StreamWriter, parse_sink

        return StreamWriter(parse_sink(self.options, schema))
