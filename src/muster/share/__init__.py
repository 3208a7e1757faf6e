"""KIP-932 share partitions: pure per-record state (no I/O, no clock)."""
