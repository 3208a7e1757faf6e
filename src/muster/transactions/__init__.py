"""Kafka transactions: the pure transaction-coordinator state machine."""
