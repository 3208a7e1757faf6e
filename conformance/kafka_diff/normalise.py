"""What legitimately differs between two brokers answering the same requests,
taken out before the comparison: random parts of ids (member ids, topic ids,
producer ids), timestamps, throttle times, where the broker listens, the
cluster's id and node id. Ids are not blanked but numbered in order of first
appearance, so "the same member answered twice" still compares."""

from __future__ import annotations

import re
from typing import Any

# Fields whose value is the broker's place or a clock, never the behaviour.
MASKED = {
    "throttle_time",
    "throttle_time_ms",
    "host",
    "port",
    "node_id",
    "cluster_id",
    "controller_id",
    "leader_id",
    "coordinator_id",
    "broker_id",
    "log_append_time",
    "log_append_time_ms",
    "timestamp",
    "max_timestamp",
    "current_leader",
    "session_id",
    "finalized_features_epoch",
    "leader_epoch",
    "current_leader_epoch",
    "topic_authorized_operations",
    "cluster_authorized_operations",
    "replica_nodes",
    "isr_nodes",
    "offline_replicas",
    "eligible_leader_replicas",
    "last_known_elr",
}
# Fields whose value is a random id: numbered, not compared literally.
IDS = {"topic_id", "producer_id", "member_id", "leader", "assignor_name_hidden"}

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_B64 = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])")


class Normaliser:
    def __init__(self, token: str) -> None:
        self.token = f"kd{token}-"
        self.ids: dict[Any, str] = {}

    def _id(self, value: Any) -> str:
        if value not in self.ids:
            self.ids[value] = f"<id{len(self.ids) + 1}>"
        return self.ids[value]

    def string(self, value: str) -> str:
        value = value.replace(self.token, "")
        value = _UUID.sub(lambda m: self._id(m.group(0)), value)
        return _B64.sub(
            lambda m: self._id(m.group(0)) if _looks_random(m.group(0)) else m.group(0), value
        )

    def value(self, value: Any, key: str = "") -> Any:
        if key in MASKED and value is not None:
            return "<masked>"
        if key in ("error_message", "error_msg", "status_message"):
            return "<message>"  # human text: never compared
        if key in IDS and value not in (None, "", -1, 0, "00000000-0000-0000-0000-000000000000"):
            if isinstance(value, str):
                value = value.replace(self.token, "")
                # "client-<uuid>" keeps its prefix; any other id is one token
                return self.string(value) if _UUID.search(value) else self._id(value)
            return self._id(value)
        if isinstance(value, dict):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            out = [self.value(v, key) for v in value]
            if key == "members" and all(isinstance(v, dict) and "member_id" in v for v in out):
                out.sort(key=lambda v: str(v["member_id"]))  # Kafka's order is a HashMap's
            if key in ("results", "groups") and all(
                isinstance(v, dict) and "group_id" in v for v in out
            ):
                out.sort(key=lambda v: str(v["group_id"]))  # likewise
            if key in ("topic_partitions", "assigned_partitions") and all(
                isinstance(v, dict) for v in out
            ):
                out.sort(key=lambda v: str(v.get("topic_name") or v.get("topic_id")))
            if key == "subscribed_topic_names" and all(isinstance(v, str) for v in out):
                out.sort()  # a set in Kafka
            if key in ("partitions", "partition_indexes") and all(isinstance(v, int) for v in out):
                out.sort()
            return out
        if isinstance(value, str):
            return self.string(value)
        return value


def _looks_random(s: str) -> bool:
    # a base64 Uuid has mixed case and digits; a 22-letter word does not
    return (
        any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s)
    )


def normalise(transcript: list[tuple[str, Any]], token: str) -> list[tuple[str, Any]]:
    n = Normaliser(token)
    return [(label.replace(f"kd{token}-", ""), n.value(v)) for label, v in transcript]


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two normalised answers differ (lists compared item by item)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in list(a) + [k for k in b if k not in a]:
            out += diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}[len]"]
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path]


def at(value: Any, path: str) -> Any:
    """The value at a path diff() printed (for the table)."""
    for part in re.findall(r"\.([^.\[]+)|\[(\d+|len)\]", path):
        key, idx = part
        try:
            if key:
                value = value.get(key, "<absent>") if isinstance(value, dict) else value
            elif idx == "len":
                return len(value) if isinstance(value, list) else value
            else:
                value = value[int(idx)]
        except (IndexError, TypeError, KeyError):
            return "<absent>"
    return value
