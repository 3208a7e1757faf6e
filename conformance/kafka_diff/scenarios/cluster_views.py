"""The admin calls UIs make for their cluster views (issue #24):
AlterClientQuotas / DescribeClientQuotas (set, remove, validate_only, refusals,
every match type), DescribeTopicPartitions (paging cursor, partition limit,
unknown and invalid names) and DescribeQuorum sent to the broker listener."""

from __future__ import annotations

from typing import Any

from conformance.kafka_diff.helpers import create_topic
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
DESCRIBE_QUORUM, DESCRIBE_TOPIC_PARTITIONS = 55, 75
EXACT, DEFAULT, ANY = 0, 1, 2


def _entity(*components: tuple[str, str | None]) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in components]


def _op(key: str, value: float = 0.0, remove: bool = False) -> dict[str, Any]:
    return {"key": key, "value": value, "remove": remove}


def _ordered(answer: Any, mine: str) -> Any:
    """Kafka lists entries and an entity's components in hash order: both sorted.
    A describe keeps only this scenario's entities (named with `mine`, or the
    defaults), so scenarios running beside it do not show."""
    if not isinstance(answer, dict) or answer.get("entries") is None:
        return answer
    entries = []
    for e in answer["entries"]:
        comps = sorted(e["entity"], key=lambda c: c["entity_type"])
        if "values" in e and not all(_mine(c["entity_name"], mine) for c in comps):
            continue
        entry = dict(e, entity=comps)
        if "values" in e:
            entry["values"] = sorted(e["values"], key=lambda v: v["key"])
        entries.append(entry)
    return dict(answer, entries=sorted(entries, key=repr))


def _mine(name: str | None, mine: str) -> bool:
    return name is None or mine in name or name == "127.0.0.1"


class Quotas:
    def __init__(self, s: Session) -> None:
        self.s = s
        self.mine = s.name()

    def alter(self, label: str, entries: list[Any], validate: bool = False, v: int = 1) -> Any:
        body = {
            "entries": [{"entity": e, "ops": ops} for e, ops in entries],
            "validate_only": validate,
        }
        answer = self.s.call(ALTER_CLIENT_QUOTAS, v, body, record=False)
        self.s.record(label, _ordered(answer, self.mine))
        return answer

    def describe(
        self, components: list[tuple[str, int, str | None]], strict: bool, v: int = 1
    ) -> Any:
        body = {
            "components": [
                {"entity_type": t, "match_type": m, "match": n} for t, m, n in components
            ],
            "strict": strict,
        }
        return _ordered(self.s.call(DESCRIBE_CLIENT_QUOTAS, v, body, record=False), self.mine)

    def settled(self, client: str, present: bool) -> None:
        """Kafka applies an alteration through its controller: wait until the
        last one (setting or removing `client`) reads back, so all before it do."""

        def visible() -> bool:
            got = self.describe([("client-id", EXACT, client)], True)
            return isinstance(got, dict) and bool(got.get("entries")) == present

        self.s.wait(visible, 15)


def quotas_store(s: Session) -> None:
    """Set, merge and remove quotas on client-id / user / user+client / ip
    entities and the defaults; describe them with every match type, strict and
    not, at v0 and v1; validate_only keeps nothing."""
    q = Quotas(s)
    c1, c2, alice, bob = s.name("c1"), s.name("c2"), s.name("alice"), s.name("bob")
    sentinel = s.name("sentinel")
    q.alter(
        "set",
        [
            (_entity(("client-id", c1)), [_op("producer_byte_rate", 1024.0)]),
            (_entity(("user", alice)), [_op("request_percentage", 50.0)]),
            (_entity(("user", alice), ("client-id", c1)), [_op("producer_byte_rate", 10.0)]),
            (_entity(("client-id", None)), [_op("producer_byte_rate", 99.0)]),
            (_entity(("user", None)), [_op("consumer_byte_rate", 77.0)]),
            (_entity(("user", None), ("client-id", None)), [_op("producer_byte_rate", 8.0)]),
            (_entity(("user", bob)), [_op("controller_mutation_rate", 0.5)]),
            (_entity(("ip", "127.0.0.1")), [_op("connection_creation_rate", 5.0)]),
        ],
    )
    q.alter("merge", [(_entity(("client-id", c1)), [_op("consumer_byte_rate", 2048.0)])])
    q.alter("set_v0", [(_entity(("client-id", c2)), [_op("request_percentage", 12.5)])], v=0)
    q.alter(
        "validate_only",
        [(_entity(("client-id", s.name("vo"))), [_op("producer_byte_rate", 5.0)])],
        validate=True,
    )
    q.alter("sentinel", [(_entity(("client-id", sentinel)), [_op("producer_byte_rate", 1.0)])])
    q.settled(sentinel, True)
    filters: dict[str, tuple[list[tuple[str, int, str | None]], bool]] = {
        "all": ([], False),
        "all_strict": ([], True),
        "client_exact": ([("client-id", EXACT, c1)], False),
        "client_exact_strict": ([("client-id", EXACT, c1)], True),
        "client_default": ([("client-id", DEFAULT, None)], False),
        "client_default_strict": ([("client-id", DEFAULT, None)], True),
        "client_any_strict": ([("client-id", ANY, None)], True),
        "user_exact": ([("user", EXACT, alice)], False),
        "user_any_strict": ([("user", ANY, None)], True),
        "user_default": ([("user", DEFAULT, None)], False),
        "user_and_client": ([("user", EXACT, alice), ("client-id", EXACT, c1)], True),
        "user_default_client_any": ([("user", DEFAULT, None), ("client-id", ANY, None)], True),
        "ip_any": ([("ip", ANY, None)], False),
        "validate_only_kept_nothing": ([("client-id", EXACT, s.name("vo"))], False),
    }
    for v in (0, 1):
        for label, (components, strict) in filters.items():
            s.record(f"describe_v{v}_{label}", q.describe(components, strict, v))
    q.alter(
        "remove_one",
        [(_entity(("client-id", c1)), [_op("producer_byte_rate", remove=True)])],
    )
    q.alter(
        "remove_unset",
        [(_entity(("client-id", s.name("never"))), [_op("producer_byte_rate", remove=True)])],
    )
    removals = [
        (_entity(("user", alice)), [_op("request_percentage", remove=True)]),
        (_entity(("user", alice), ("client-id", c1)), [_op("producer_byte_rate", remove=True)]),
        (_entity(("client-id", None)), [_op("producer_byte_rate", remove=True)]),
        (_entity(("user", None)), [_op("consumer_byte_rate", remove=True)]),
        (
            _entity(("user", None), ("client-id", None)),
            [_op("producer_byte_rate", remove=True)],
        ),
        (_entity(("user", bob)), [_op("controller_mutation_rate", remove=True)]),
        (_entity(("ip", "127.0.0.1")), [_op("connection_creation_rate", remove=True)]),
        (_entity(("client-id", c2)), [_op("request_percentage", remove=True)]),
    ]
    q.alter("remove_rest", removals)
    q.alter(
        "remove_sentinel",
        [(_entity(("client-id", sentinel)), [_op("producer_byte_rate", remove=True)])],
    )
    q.settled(sentinel, False)
    s.record("after_removals", q.describe([], False))


def quotas_refused(s: Session) -> None:
    """Entries Kafka refuses, one per request, and a request mixing a refused
    entry with an accepted one (validate_only: nothing is kept)."""
    q = Quotas(s)
    c = s.name("c")
    cases: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
        "unknown_key": (_entity(("client-id", c)), [_op("no_such_quota", 5.0)]),
        "unknown_entity_type": (_entity(("nobody", c)), [_op("producer_byte_rate", 5.0)]),
        "negative": (_entity(("client-id", c)), [_op("producer_byte_rate", -5.0)]),
        "zero": (_entity(("client-id", c)), [_op("request_percentage", 0.0)]),
        "fraction": (_entity(("client-id", c)), [_op("consumer_byte_rate", 1.5)]),
        "too_large": (_entity(("client-id", c)), [_op("producer_byte_rate", 1e20)]),
        "ip_key_on_client": (_entity(("client-id", c)), [_op("connection_creation_rate", 5.0)]),
        "client_key_on_ip": (_entity(("ip", "127.0.0.1")), [_op("producer_byte_rate", 5.0)]),
        "ip_fraction": (_entity(("ip", None)), [_op("connection_creation_rate", 5.5)]),
        "ip_with_user": (
            _entity(("ip", "127.0.0.1"), ("user", c)),
            [_op("connection_creation_rate", 5.0)],
        ),
        "empty_entity": ([], [_op("producer_byte_rate", 5.0)]),
        "empty_user": (_entity(("user", "")), [_op("producer_byte_rate", 5.0)]),
        "empty_client": (_entity(("client-id", "")), [_op("producer_byte_rate", 5.0)]),
        "key_twice": (
            _entity(("client-id", c)),
            [_op("producer_byte_rate", 5.0), _op("producer_byte_rate", 6.0)],
        ),
    }
    for label, entry in cases.items():
        q.alter(label, [entry], validate=True)
    twice = _entity(("client-id", s.name("twice")))
    q.alter(
        "entity_twice",
        [(twice, [_op("producer_byte_rate", 5.0)]), (twice, [_op("consumer_byte_rate", 5.0)])],
        validate=True,
    )
    q.alter(
        "one_of_two",
        [
            (_entity(("client-id", s.name("ok"))), [_op("producer_byte_rate", 5.0)]),
            (_entity(("client-id", s.name("bad"))), [_op("nope", 5.0)]),
        ],
        validate=True,
    )
    bad_filters: dict[str, list[tuple[str, int, str | None]]] = {
        "unknown_type": [("nobody", EXACT, "x")],
        "exact_null": [("client-id", EXACT, None)],
        "type_twice": [("client-id", ANY, None), ("client-id", ANY, None)],
        "unknown_match_type": [("client-id", 7, None)],
        "ip_with_user": [("ip", ANY, None), ("user", ANY, None)],
    }
    for label, components in bad_filters.items():
        s.record(f"describe_{label}", q.describe(components, False))


register("quotas", "store", quotas_store)
register("quotas", "refused", quotas_refused)


def _dtp(s: Session, label: str, topics: list[str], limit: int = 2000, cursor: Any = None) -> None:
    body = {
        "topics": [{"name": t} for t in topics],
        "response_partition_limit": limit,
        "cursor": cursor,
    }
    s.call(DESCRIBE_TOPIC_PARTITIONS, 0, body, label)


def describe_topic_partitions(s: Session) -> None:
    """Two topics of 3 and 2 partitions, paged by partition limit and cursor;
    unknown, invalid and empty names; a cursor outside the request."""
    if not s.supports(DESCRIBE_TOPIC_PARTITIONS, 0):
        return
    a, b = s.name("a"), s.name("b")
    create_topic(s, a, 3)
    create_topic(s, b, 2)
    both = [b, a]  # asked out of order: answered in name order
    _dtp(s, "both", both)
    _dtp(s, "limit_2", both, 2)
    _dtp(s, "cursor_a2", both, 2, {"topic_name": a, "partition_index": 2})
    _dtp(s, "cursor_b0", both, 2, {"topic_name": b, "partition_index": 0})
    _dtp(s, "limit_fills_first_topic", both, 3)
    _dtp(s, "cursor_past_partitions", both, 10, {"topic_name": a, "partition_index": 9})
    _dtp(s, "cursor_not_requested", both, 2, {"topic_name": s.name("zzz"), "partition_index": 0})
    _dtp(s, "cursor_negative", both, 2, {"topic_name": a, "partition_index": -1})
    _dtp(s, "limit_0", [b], 0)
    _dtp(s, "limit_negative", [b], -5)
    _dtp(s, "limit_huge", [b], 100000)
    _dtp(s, "named_twice", [b, b])
    _dtp(s, "unknown", [a, s.name("nope")])
    _dtp(s, "unknown_sorts_first", [s.name("0-nope"), b])
    _dtp(s, "invalid_name", ["bad name!"])
    _dtp(s, "empty_name", [""])


register("describe_topic_partitions", "v0", describe_topic_partitions)


def _quorum_body(*parts: tuple[str, int]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, int]]] = {}
    for name, index in parts:
        topics.setdefault(name, []).append({"partition_index": index})
    return {"topics": [{"topic_name": n, "partitions": p} for n, p in topics.items()]}


def _quorum_view(answer: Any) -> Any:
    """What must be equal: who leads and votes, no observers, the errors. The
    high watermark, a voter's log end offset and its timestamps are Kafka's
    metadata log position and clock (muster has no metadata log, DIFFERENCES.md)."""
    if not isinstance(answer, dict):
        return answer
    out = dict(answer)
    for t in out.get("topics", []):
        for p in t["partitions"]:
            p["high_watermark"] = "<position>" if p["error_code"] == 0 else p["high_watermark"]
            for r in (*p["current_voters"], *p["observers"]):
                r["log_end_offset"] = "<position>"
                # node ids differ (masked): the leader voting is what must be equal
                if r["replica_id"] == p["leader_id"]:
                    r["replica_id"] = "<leader>"
                for k in ("last_fetch_timestamp", "last_caught_up_timestamp"):
                    if k in r:
                        r[k] = "<clock>" if r[k] > 0 else r[k]
    for n in out.get("nodes", []):
        for listener in n["listeners"]:
            listener["name"] = "<listener>"  # Kafka's CONTROLLER listener, muster's own
    return out


def _quorum(v: int):
    def run(s: Session) -> None:
        if not s.supports(DESCRIBE_QUORUM, v):
            return
        for label, body in (
            ("metadata_partition", _quorum_body(("__cluster_metadata", 0))),
            ("other_partition", _quorum_body(("__cluster_metadata", 1))),
            ("other_topic", _quorum_body((s.name("t"), 0))),
            ("named_twice", _quorum_body(("__cluster_metadata", 0), ("__cluster_metadata", 0))),
            ("nothing", {"topics": []}),
        ):
            s.record(label, _quorum_view(s.call(DESCRIBE_QUORUM, v, body, record=False)))

    return run


for _v in range(3):
    register("describe_quorum", f"v{_v}", _quorum(_v))
