"""muster: a Kafka-wire-compatible broker built around the consumer group."""
