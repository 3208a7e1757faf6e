"""Names and sizes the demo's parts share."""

def client_config(bootstrap: str, **settings: object) -> dict[str, object]:
    """Settings every demo client (muster's own client) starts from."""
    return {"bootstrap.servers": bootstrap, **settings}


TOPIC = "demo.orders"
GROUP = "demo-analytics"
SPARK_GROUP = "demo-spark-revenue"
PARTITIONS = 6
EVENTS = 6000
TRICKLE_PER_SECOND = 200
# Short, so that the SIGKILLed member's partitions move within the demo's patience.
MEMBER_SESSION_TIMEOUT_MS = 6000


def member_config(bootstrap: str, group: str, name: str) -> dict[str, object]:
    """Client settings of every demo group member, thread or process."""
    return {
        **client_config(bootstrap),
        "group.id": group,
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 500,
        "session.timeout.ms": MEMBER_SESSION_TIMEOUT_MS,
    }
