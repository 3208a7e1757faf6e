"""Kafka's classic consumer-group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup)."""
