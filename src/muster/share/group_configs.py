"""The dynamic configs of a GROUP resource (Kafka's GroupConfig) muster
serves, pure: their names, their defaults (the broker's own property, as in
Kafka) and the checks Kafka 4.4 makes before it stores a value — the value's
type and floor, then the bounds the broker's properties set (a share
group's lock duration between `group.share.min/max.record.lock.duration.ms`,
its delivery-count limit, in-flight cap, session timeout and heartbeat
interval between theirs), then a session timeout above its heartbeat
interval. A group config outside its bounds is
refused with INVALID_CONFIG and Kafka's message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.share.reset import check_reset

# group config -> (broker property it defaults to, that property's default)
DEFAULTS: dict[str, tuple[str | None, str]] = {
    "share.auto.offset.reset": (None, "latest"),
    "share.isolation.level": (None, "read_uncommitted"),
    "share.record.lock.duration.ms": ("group.share.record.lock.duration.ms", "30000"),
    "share.session.timeout.ms": ("group.share.session.timeout.ms", "45000"),
    "share.heartbeat.interval.ms": ("group.share.heartbeat.interval.ms", "5000"),
    "consumer.session.timeout.ms": ("group.consumer.session.timeout.ms", "45000"),
    "consumer.heartbeat.interval.ms": ("group.consumer.heartbeat.interval.ms", "5000"),
    "share.delivery.count.limit": ("group.share.delivery.count.limit", "5"),
    "share.partition.max.record.locks": ("group.share.partition.max.record.locks", "2000"),
}

STRINGS = ("share.auto.offset.reset", "share.isolation.level")

# the floor of the value itself (Kafka's ConfigDef `atLeast`)
FLOORS = {"share.record.lock.duration.ms": 1000}

# group config -> the broker properties bounding it (and their defaults), in
# the order Kafka checks them
BOUNDS: dict[str, tuple[tuple[str, int], tuple[str, int]]] = {
    "consumer.heartbeat.interval.ms": (
        ("group.consumer.min.heartbeat.interval.ms", 5000),
        ("group.consumer.max.heartbeat.interval.ms", 15000),
    ),
    "consumer.session.timeout.ms": (
        ("group.consumer.min.session.timeout.ms", 45000),
        ("group.consumer.max.session.timeout.ms", 60000),
    ),
    "share.heartbeat.interval.ms": (
        ("group.share.min.heartbeat.interval.ms", 5000),
        ("group.share.max.heartbeat.interval.ms", 15000),
    ),
    "share.session.timeout.ms": (
        ("group.share.min.session.timeout.ms", 45000),
        ("group.share.max.session.timeout.ms", 60000),
    ),
    "share.record.lock.duration.ms": (
        ("group.share.min.record.lock.duration.ms", 15000),
        ("group.share.max.record.lock.duration.ms", 60000),
    ),
    "share.delivery.count.limit": (
        ("group.share.min.delivery.count.limit", 2),
        ("group.share.max.delivery.count.limit", 10),
    ),
    "share.partition.max.record.locks": (
        ("group.share.min.partition.max.record.locks", 100),
        ("group.share.max.partition.max.record.locks", 4000),
    ),
}

# (session timeout, heartbeat interval): the first must be the greater
ABOVE = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
)


def default(name: str, broker: Mapping[str, Any]) -> str:
    """A group config's value when the group does not set it."""
    prop, fallback = DEFAULTS[name]
    return str(broker.get(prop, fallback)) if prop is not None else fallback


def check_value(name: str, value: str) -> str | None:
    """Why a group config cannot take this value on its own (None: it can)."""
    if name not in DEFAULTS:
        return f"Unknown group config name: {name}"
    if name == "share.auto.offset.reset":
        if not check_reset(value):
            return f"Invalid value {value} for configuration share.auto.offset.reset"
        return None
    if name == "share.isolation.level":
        if value not in ("read_uncommitted", "read_committed"):
            return f"Invalid value {value} for configuration share.isolation.level"
        return None
    try:
        number = int(value.strip())
    except ValueError:
        return f"Invalid value {value} for configuration {name}: Not a number of type INT"
    floor = FLOORS.get(name, 1)
    if number < floor:
        return f"Invalid value {value} for configuration {name}: Value must be at least {floor}"
    return None


def check_group(configs: Mapping[str, str], broker: Mapping[str, Any]) -> str | None:
    """Why a group's whole set of configs (each already `check_value`d) is
    refused under the broker's bounds (None: accepted)."""

    def value(name: str) -> int:
        return int((configs[name] if name in configs else default(name, broker)).strip())

    for name, ((low_prop, low), (high_prop, high)) in BOUNDS.items():
        if name not in configs:
            continue  # only what the group sets is checked (Kafka's validateIntRange)
        lowest, highest = int(broker.get(low_prop, low)), int(broker.get(high_prop, high))
        if not lowest <= value(name) <= highest:
            return f"{name} must be in the range {lowest} to {highest} inclusive."
    for session, heartbeat in ABOVE:
        if (session in configs or heartbeat in configs) and value(session) <= value(heartbeat):
            return f"{session} must be greater than {heartbeat}"
    return None
