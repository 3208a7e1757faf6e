"""KIP-848 consumer groups (the ConsumerGroupHeartbeat protocol): not built yet.
See README.md for where it plugs in."""
