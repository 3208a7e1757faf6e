"""TLS, SASL and ACLs as Kafka does them (see README.md)."""
