"""Client quotas as Kafka 4.4 keeps them: entity (client-id / user / ip, a None
name for the default) -> quota key -> value, validated as Kafka validates an
AlterClientQuotas entry and matched as Kafka matches a DescribeClientQuotas
filter (kafka-diff `quotas.*`). One JSON file beside the logs, rewritten whole
and fsynced before the change is acknowledged: quotas change rarely.

muster stores and serves them so `kafka-configs.sh --entity-type clients|users`
and the UIs that read them behave as on Kafka; it does not throttle by them.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import socket
from pathlib import Path

from muster.security.store import _read, _write_durably

CLIENT_ID, USER, IP = "client-id", "user", "ip"
# The order Kafka lists an entity's components in (both brokers are compared
# sorted; this keeps muster's own answers stable).
TYPE_ORDER = (CLIENT_ID, USER, IP)
CLIENT_KEYS = {
    "producer_byte_rate": True,  # True: Kafka keeps it as a long (no fraction)
    "consumer_byte_rate": True,
    "request_percentage": False,
    "controller_mutation_rate": False,
}
IP_KEYS = {"connection_creation_rate": True}
LONG_MAX = 2**63 - 1
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]  # components in TYPE_ORDER


class QuotaError(Exception):
    """An entry or filter Kafka refuses; `code` is the Kafka error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


INVALID_REQUEST, UNSUPPORTED_VERSION = 42, 35


def entity_of(components: list[tuple[str, str | None]]) -> Entity:
    """Kafka's entity is a map: a type named twice keeps its last name."""
    by_type = dict(components)
    return tuple((t, by_type[t]) for t in sorted(by_type, key=_type_rank))


def _type_rank(t: str) -> tuple[int, str]:
    return (TYPE_ORDER.index(t), "") if t in TYPE_ORDER else (len(TYPE_ORDER), t)


def _resolvable(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, None)
        return True
    except (OSError, UnicodeError):
        return False


# Kafka's words (the missing space is Kafka's)
IP_ENTITY_MIXED = (
    "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
)
IP_FILTER_MIXED = (
    "Invalid entity filter component combination. IP filter component should not"
    " be used with user or clientId filter component."
)


def _ip_alone(types: set[str], message: str) -> None:
    """An ip quota is never combined with a user or client-id (Kafka refuses it)."""
    if IP in types and len(types) > 1:
        raise QuotaError(INVALID_REQUEST, message)


def check_entity(entity: Entity) -> None:
    """Kafka's checks of the entity alone, in its order (blocking: may resolve a host)."""
    if not entity:
        raise QuotaError(INVALID_REQUEST, "Invalid empty client quota entity")
    types = {t for t, _ in entity}
    for t, name in entity:
        if t not in TYPE_ORDER:
            raise QuotaError(INVALID_REQUEST, f"Unhandled client quota entity type: {t}")
        if name == "" and t in (USER, CLIENT_ID):
            raise QuotaError(INVALID_REQUEST, f"Empty {t} not supported")
    _ip_alone(types, IP_ENTITY_MIXED)
    ip = dict(entity).get(IP)
    if IP in types and ip is not None and not _resolvable(ip):
        raise QuotaError(INVALID_REQUEST, f"{ip} is not a valid IP or resolvable host.")


def check_ops(entity: Entity, ops: list[tuple[str, float, bool]]) -> None:
    keys = [k for k, _, _ in ops]
    if len(set(keys)) != len(keys):
        # Kafka's words for a key named twice in one entry
        raise QuotaError(INVALID_REQUEST, f"Ignoring duplicate entity {describe(entity)}")
    allowed = IP_KEYS if any(t == IP for t, _ in entity) else CLIENT_KEYS
    for key, value, remove in ops:
        if remove:
            continue  # Kafka removes any key, known or not, whatever the value
        if key not in allowed:
            raise QuotaError(INVALID_REQUEST, f"Invalid configuration key {key}")
        if allowed[key]:
            if value > LONG_MAX:
                raise QuotaError(
                    INVALID_REQUEST, f"Proposed value for {key} is too large for a LONG."
                )
            if math.isfinite(value) and value != math.floor(value):
                raise QuotaError(INVALID_REQUEST, f"{key} cannot be a fractional value.")
        if not value > 0:
            raise QuotaError(INVALID_REQUEST, f"Quota {key} must be greater than 0")


def describe(entity: Entity) -> str:
    inner = ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def check_filter(components: list[tuple[str, int, str | None]]) -> None:
    seen: set[str] = set()
    for t, match_type, match in components:
        if t not in TYPE_ORDER:
            raise QuotaError(UNSUPPORTED_VERSION, f"Unsupported entity type {t}")
        if t in seen:
            raise QuotaError(
                INVALID_REQUEST, f"Entity type {t} cannot appear more than once in the filter."
            )
        seen.add(t)
        if match_type == MATCH_EXACT and match is None:
            raise QuotaError(
                INVALID_REQUEST,
                "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            )
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            raise QuotaError(INVALID_REQUEST, f"Unknown match type {match_type}")
    _ip_alone(seen, IP_FILTER_MIXED)


def matches(entity: Entity, components: list[tuple[str, int, str | None]], strict: bool) -> bool:
    names = dict(entity)
    if strict and set(names) != {t for t, _, _ in components}:
        return False
    for t, match_type, match in components:
        if t not in names:
            return False
        if match_type == MATCH_EXACT and names[t] != match:
            return False
        if match_type == MATCH_DEFAULT and names[t] is not None:
            return False
    return True


class QuotaStore:
    """The quotas in force; `path` None keeps them in memory."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lock = asyncio.Lock()  # the handler's read-modify-write, one at a time
        self.quotas: dict[Entity, dict[str, float]] = {}
        for row in _read(path, []):
            entity = tuple((t, n) for t, n in row["entity"])
            self.quotas[entity] = {k: float(v) for k, v in row["values"].items()}

    def applied(
        self, changes: list[tuple[Entity, list[tuple[str, float, bool]]]]
    ) -> dict[Entity, dict[str, float]]:
        """The quotas once `changes` are made (computed, not yet kept)."""
        out = {e: dict(v) for e, v in self.quotas.items()}
        for entity, ops in changes:
            values = out.setdefault(entity, {})
            for key, value, remove in ops:
                if remove:
                    values.pop(key, None)
                else:
                    values[key] = value
            if not values:
                del out[entity]
        return out

    def replace(self, quotas: dict[Entity, dict[str, float]]) -> None:
        """Blocking (fsync): call off the event loop."""
        if self.path is not None:
            rows = [
                {"entity": [list(c) for c in e], "values": v}
                for e, v in sorted(quotas.items(), key=str)
            ]
            _write_durably(self.path, rows)
        self.quotas = quotas
