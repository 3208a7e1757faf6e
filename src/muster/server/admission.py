"""Connection caps with Kafka's names: `max.connections.per.ip` (with
`max.connections.per.ip.overrides`) and `max.connections`.

Kafka closes a connection over the per-address cap right after accepting it
(and logs it); over `max.connections` its acceptor stops accepting until a
slot frees. muster closes over either cap at once, with a log line: a client
retries either way, and no socket waits unserved in the listen backlog.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from muster.config import ConfigError


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,host:count` (Kafka's format) -> {host: count}."""
    out: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ConfigError(f"max.connections.per.ip.overrides: cannot read {item!r}")
        out[host.strip()] = int(count)
    return out


class Admission:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self.total_cap = int(config["max.connections"])
        self.per_ip_cap = int(config["max.connections.per.ip"])
        self.overrides = parse_overrides(str(config["max.connections.per.ip.overrides"]))
        self.by_host: Counter[str] = Counter()
        self.total = 0
        self.refused = 0

    def admit(self, host: str) -> str | None:
        """Counts the connection in, or returns why it is refused."""
        cap = self.overrides.get(host, self.per_ip_cap)
        if self.by_host[host] >= cap:
            self.refused += 1
            return f"{host} already has the configured maximum of {cap} connections"
        if self.total >= self.total_cap:
            self.refused += 1
            return f"the broker already has the configured maximum of {self.total_cap} connections"
        self.by_host[host] += 1
        self.total += 1
        return None

    def release(self, host: str) -> None:
        self.total -= 1
        self.by_host[host] -= 1
        if self.by_host[host] <= 0:
            del self.by_host[host]
