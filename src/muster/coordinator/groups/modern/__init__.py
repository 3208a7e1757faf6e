"""KIP-848 consumer groups (the ConsumerGroupHeartbeat protocol). See
README.md for its modules and where it plugs into the shard."""
