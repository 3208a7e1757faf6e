"""Rebalance and lag analytics on PySpark (`muster analyze`).

Every transform is a function over DataFrames with the Kafka source's schema
(`schema.KAFKA_SCHEMA`), so each can be tested on hand-made rows; `load`
reads the topics through the `muster` Spark source, `job.run_analysis`
wires everything and writes Parquet tables plus an HTML report.
"""
