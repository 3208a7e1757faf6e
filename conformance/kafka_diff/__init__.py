"""Differential corpus (issue #21 item 2): the same raw requests to Apache Kafka
4.4 and to muster, answers compared field by field. `python -m
conformance.kafka_diff` (or `make kafka-diff`); see conformance/README.md."""
