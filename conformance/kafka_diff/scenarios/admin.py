"""CreateTopics / DeleteTopics / CreatePartitions / DescribeConfigs (topic and
broker: values, defaults, sources, synonyms, read-only flags) /
IncrementalAlterConfigs / AlterConfigs, invalid values included."""

from __future__ import annotations

from typing import Any

from conformance.kafka_diff.helpers import CREATE_TOPICS, DELETE_TOPICS, METADATA, create_topic
from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session

CREATE_PARTITIONS, DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER = 37, 32, 33, 44
TOPIC, BROKER = 2, 4


def topic_spec(name: str, partitions: int = 1, rf: int = 1, **configs: str) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }


def created(answer: Any) -> Any:
    """A CreateTopics answer without the topic's full config list (DescribeConfigs
    scenarios compare configs)."""
    if not isinstance(answer, dict):
        return answer
    return [
        {k: v for k, v in t.items() if k != "configs"}
        | {"configs": len(t.get("configs") or []) > 0}
        for t in answer["topics"]
    ]


def _create(v: int):
    def run(s: Session) -> None:
        if not s.supports(CREATE_TOPICS, v):
            return
        n = s.name
        cases = [
            ("ok", topic_spec(n("ok"), 3)),
            ("default_partitions", topic_spec(n("dflt"), -1, -1)),
            ("zero_partitions", topic_spec(n("zero"), 0)),
            ("rf_too_big", topic_spec(n("rf"), 1, 3)),
            ("bad_name", topic_spec("bad name!", 1)),
            ("dot_name", topic_spec(".", 1)),
            ("long_name", topic_spec("x" * 250, 1)),
            ("bad_config_value", topic_spec(n("cfgv"), 1, **{"retention.ms": "soon"})),
            ("unknown_config", topic_spec(n("cfgk"), 1, **{"no.such.config": "1"})),
            ("good_config", topic_spec(n("cfg"), 1, **{"cleanup.policy": "compact"})),
            ("internal_name", topic_spec("__transaction_state", 1)),
        ]
        for label, spec in cases:
            a = s.call(CREATE_TOPICS, v, {"topics": [spec], "timeout": 30000}, record=False)
            s.record(label, created(a))
        a = s.call(CREATE_TOPICS, v, {"topics": [topic_spec(n("ok"), 3)]}, record=False)
        s.record("exists", created(a))
        a = s.call(
            CREATE_TOPICS,
            v,
            {"topics": [topic_spec(n("vo"), 2)], "validate_only": True},
            record=False,
        )
        s.record("validate_only", created(a))
        a = s.call(
            CREATE_TOPICS,
            v,
            {"topics": [topic_spec(n("dup"), 1), topic_spec(n("dup"), 1)]},
            record=False,
        )
        s.record("duplicate_in_request", created(a))

    return run


def _delete(v: int):
    def run(s: Session) -> None:
        if not s.supports(DELETE_TOPICS, v):
            return
        t = s.name("t")
        create_topic(s, t, 1)
        body = {"topic_names": [t], "topics": [{"name": t, "topic_id": None}], "timeout": 30000}
        s.call(DELETE_TOPICS, v, body, "delete")
        missing = s.name("missing")
        body = {"topic_names": [missing], "topics": [{"name": missing}], "timeout": 30000}
        s.call(DELETE_TOPICS, v, body, "missing")
        # never __consumer_offsets: Kafka 4.4 deletes it (DIFFERENCES.md)
        if v >= 6:
            body = {"topics": [{"name": None, "topic_id": "b7d0c5a4-0000-4000-8000-000000000001"}]}
            s.call(DELETE_TOPICS, v, body, "unknown_topic_id")

    return run


def _partitions(v: int):
    def run(s: Session) -> None:
        if not s.supports(CREATE_PARTITIONS, v):
            return
        t = s.name("t")
        create_topic(s, t, 2)
        for label, count in (("grow", 4), ("same", 4), ("shrink", 1)):
            body = {
                "topics": [{"name": t, "count": count, "assignments": None}],
                "timeout": 30000,
                "validate_only": False,
            }
            s.call(CREATE_PARTITIONS, v, body, label)
        body = {
            "topics": [{"name": s.name("missing"), "count": 2, "assignments": None}],
            "timeout": 30000,
        }
        s.call(CREATE_PARTITIONS, v, body, "missing")
        body = {
            "topics": [{"name": t, "count": 9, "assignments": None}],
            "validate_only": True,
            "timeout": 30000,
        }
        s.call(CREATE_PARTITIONS, v, body, "validate_only")
        body = {
            "topics": [{"name": t, "count": 5, "assignments": [{"broker_ids": [7]}]}],
            "timeout": 30000,
        }
        s.call(CREATE_PARTITIONS, v, body, "bad_assignment")

    return run


for _v in range(2, 8):
    register("admin", f"create_topics_v{_v}", _create(_v))
for _v in range(1, 7):
    register("admin", f"delete_topics_v{_v}", _delete(_v))
for _v in range(4):
    register("admin", f"create_partitions_v{_v}", _partitions(_v))


def node_id(s: Session) -> str:
    a = s.call(METADATA, 12, {"topics": [], "allow_auto_topic_creation": False}, record=False)
    return str(a["brokers"][0]["node_id"])


TOPIC_KEYS = [
    "retention.ms",
    "cleanup.policy",
    "max.message.bytes",
    "segment.bytes",
    "min.insync.replicas",
    "compression.type",
    "message.timestamp.type",
    "unclean.leader.election.enable",
    "retention.bytes",
    "no.such.config",
]
BROKER_KEYS = [
    "log.retention.hours",
    "num.partitions",
    "auto.create.topics.enable",
    "message.max.bytes",
    "group.initial.rebalance.delay.ms",
    "log.dirs",
    "offsets.topic.num.partitions",
    "group.min.session.timeout.ms",
    "transaction.max.timeout.ms",
    "no.such.config",
]


def by_name(answer: Any) -> Any:
    """DescribeConfigs results with each config keyed by name (orders differ)."""
    if not isinstance(answer, dict):
        return answer
    out = []
    for r in answer["results"]:
        r = dict(r)
        r["resource_name"] = "<node>" if r["resource_type"] == BROKER else r["resource_name"]
        r["configs"] = {
            c["name"].replace(".", "_"): {k: v for k, v in c.items() if k != "name"}
            for c in r["configs"]
        }
        out.append(r)
    return out


def _describe(v: int):
    def run(s: Session) -> None:
        if not s.supports(DESCRIBE_CONFIGS, v):
            return
        t = s.name("t")
        create_topic(s, t, 1, configs={"retention.ms": "3600000"})
        node = node_id(s)
        body = {
            "resources": [
                {"resource_type": TOPIC, "resource_name": t, "configuration_keys": TOPIC_KEYS}
            ],
            "include_synonyms": True,
            "include_documentation": False,
        }
        s.record("topic_keys", by_name(s.call(DESCRIBE_CONFIGS, v, body, record=False)))
        body["resources"] = [
            {"resource_type": BROKER, "resource_name": node, "configuration_keys": BROKER_KEYS}
        ]
        s.record("broker_keys", by_name(s.call(DESCRIBE_CONFIGS, v, body, record=False)))
        for label, rtype, name in (
            ("missing_topic", TOPIC, s.name("missing")),
            ("other_broker", BROKER, "999"),
            ("bad_broker_id", BROKER, "x"),
            ("bad_type", 99, "x"),
        ):
            body["resources"] = [
                {"resource_type": rtype, "resource_name": name, "configuration_keys": None}
            ]
            s.record(label, by_name(s.call(DESCRIBE_CONFIGS, v, body, record=False)))

    return run


for _v in range(5):
    register("admin", f"describe_configs_v{_v}", _describe(_v))


def config_names(s: Session) -> None:
    """Which config names each broker lists for a topic and for itself."""
    t = s.name("t")
    create_topic(s, t, 1)
    for rtype, name, label in ((TOPIC, t, "topic"), (BROKER, node_id(s), "broker")):
        body = {
            "resources": [
                {"resource_type": rtype, "resource_name": name, "configuration_keys": None}
            ]
        }
        a = s.call(DESCRIBE_CONFIGS, 4, body, record=False)
        s.record(f"{label}_names", sorted(c["name"] for c in a["results"][0]["configs"]))


register("admin", "config_names", config_names)


def record_topic_configs(
    s: Session, topic: str, expect: dict[str, tuple[str, int]], label: str = "after"
) -> None:
    """The topic's retention.ms and cleanup.policy once they read as `expect`
    (value, source) or after 15 s: Kafka applies an alteration through its
    controller and describes it when its metadata image has caught up."""
    keys = ["retention.ms", "cleanup.policy"]
    body = {
        "resources": [{"resource_type": TOPIC, "resource_name": topic, "configuration_keys": keys}]
    }

    def described() -> Any:
        return by_name(s.call(DESCRIBE_CONFIGS, 4, body, record=False))

    def settled() -> bool:
        got = described()
        if not isinstance(got, list):
            return False
        configs = got[0]["configs"]
        return all(
            (configs.get(k.replace(".", "_")) or {}).get("value") == v
            and configs[k.replace(".", "_")]["config_source"] == src
            for k, (v, src) in expect.items()
        )

    s.wait(settled, 15)
    s.record(label, described())


def _incremental(v: int):
    def run(s: Session) -> None:
        t = s.name("t")
        create_topic(s, t, 1)

        def alter(
            label: str,
            configs: list[dict[str, Any]],
            validate: bool = False,
            rtype: int = TOPIC,
            name: str = t,
        ) -> None:
            body = {
                "resources": [{"resource_type": rtype, "resource_name": name, "configs": configs}],
                "validate_only": validate,
            }
            s.call(INCREMENTAL_ALTER, v, body, label)

        alter("set", [{"name": "retention.ms", "config_operation": 0, "value": "7200000"}])
        alter("set_invalid", [{"name": "retention.ms", "config_operation": 0, "value": "x"}])
        alter("set_unknown", [{"name": "no.such", "config_operation": 0, "value": "1"}])
        alter("delete", [{"name": "retention.ms", "config_operation": 1, "value": None}])
        alter(
            "append_list", [{"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]
        )
        alter("append_non_list", [{"name": "retention.ms", "config_operation": 2, "value": "1"}])
        alter("subtract", [{"name": "cleanup.policy", "config_operation": 3, "value": "compact"}])
        alter("bad_op", [{"name": "retention.ms", "config_operation": 9, "value": "1"}])
        alter(
            "validate_only",
            [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
            validate=True,
        )
        alter(
            "duplicate_key",
            [
                {"name": "retention.ms", "config_operation": 0, "value": "1"},
                {"name": "retention.ms", "config_operation": 1, "value": None},
            ],
        )
        alter(
            "missing_topic",
            [{"name": "retention.ms", "config_operation": 0, "value": "1"}],
            name=s.name("missing"),
        )
        record_topic_configs(
            s, t, {"retention.ms": ("604800000", 5), "cleanup.policy": ("delete", 1)}
        )

    return run


def _alter(v: int):
    def run(s: Session) -> None:
        t = s.name("t")
        create_topic(s, t, 1, configs={"cleanup.policy": "compact"})

        def alter(
            label: str, configs: dict[str, str | None], validate: bool = False, name: str = t
        ) -> None:
            body = {
                "resources": [
                    {
                        "resource_type": TOPIC,
                        "resource_name": name,
                        "configs": [{"name": k, "value": val} for k, val in configs.items()],
                    }
                ],
                "validate_only": validate,
            }
            s.call(ALTER_CONFIGS, v, body, label)

        alter("set", {"retention.ms": "7200000"})  # replaces: cleanup.policy back to default
        alter("invalid", {"retention.ms": "never"})
        alter("unknown", {"no.such": "1"})
        alter("validate_only", {"retention.ms": "5"}, validate=True)
        alter("missing_topic", {"retention.ms": "5"}, name=s.name("missing"))
        record_topic_configs(
            s, t, {"retention.ms": ("7200000", 1), "cleanup.policy": ("delete", 5)}
        )

    return run


for _v in range(2):
    register("admin", f"incremental_alter_configs_v{_v}", _incremental(_v))
for _v in range(3):
    register("admin", f"alter_configs_v{_v}", _alter(_v))
