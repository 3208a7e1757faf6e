"""Names and sizes the demo's parts share."""

TOPIC = "demo.orders"
GROUP = "demo-analytics"
SPARK_GROUP = "demo-spark-revenue"
PARTITIONS = 6
EVENTS = 6000
TRICKLE_PER_SECOND = 200
# Short, so that the SIGKILLed member's partitions move within the demo's patience.
MEMBER_SESSION_TIMEOUT_MS = 6000
