"""Differences conformance/DIFFERENCES.md explains: (scenario pattern, field
pattern, reason), fnmatch patterns over the scenario's name and the differing
path `<step>:<label>.<field>...` the runner prints. Each reason starts with the
DIFFERENCES.md section (D1, D2, ...) that says why; keep both files in step."""

from __future__ import annotations

import fnmatch

# ApiVersions ranges, one entry per API key that differs (DIFFERENCES.md D1).
_KEY_REASONS = {
    "D1.a newer versions not served yet": [0, 1, 2, 3, 8, 9, 15, 18, 22, 24, 25, 26, 28, 42],
    "D1.b API not implemented (single node / feature out of scope)": [
        23,
        27,
        34,
        35,
        38,
        39,
        40,
        41,
        43,
        45,
        46,
        57,
        60,
        61,
        64,
        65,
        66,
        74,
        80,
        81,
        83,
        84,
        85,
        86,
        87,
        88,
        89,
        93,
        94,
    ],
}

DOCUMENTED: list[tuple[str, str, str]] = [
    *[
        (f"api_versions.key_{k:02d}", "*", reason)
        for reason, keys in _KEY_REASONS.items()
        for k in keys
    ],
    ("api_versions.request_v3", "*_features*", "D1.c fewer features finalized"),
    ("api_versions.request_v4", "*", "D1.a ApiVersions v4-v5 not served"),
    ("api_versions.request_v5", "*", "D1.a ApiVersions v4-v5 not served"),
    ("api_versions.unknown_version", "*.api_keys*", "D1.a ApiVersions v4-v5 not served"),
    ("*", "*:unsupported-by-muster", "D1.a a version muster does not serve yet"),
    ("*", "*:unsupported-by-kafka", "D2 a version Kafka 4 removed (KIP-896), muster serves"),
    ("malformed.api_versions_v99_no_tags", "*", "D3 lenient KIP-511 answer"),
    ("consumer.*", "*_epoch", "D4 Kafka's epochs run ahead (asynchronous assignment)"),
    (
        "share_groups.*",
        "*_epoch",
        "D13 share groups: Kafka assigns once share state is initialised",
    ),
    (
        "share_groups.*",
        "*:join.assignment*",
        "D13 share groups: Kafka assigns once share state is initialised",
    ),
    ("consumer.join_leave_v0", "*member_id", "D5 server-generated member id format"),
    ("consumer.fencing_v0", "*member_id", "D5 server-generated member id format"),
    ("admin.config_names", "*", "D6 muster's config set is a subset"),
    (
        "admin.describe_configs_v*",
        "*:topic_keys*.configs.compression_type",
        "D6 config not implemented",
    ),
    (
        "admin.describe_configs_v*",
        "*:topic_keys*.configs.min_insync_replicas",
        "D6 config not implemented",
    ),
    (
        "admin.describe_configs_v*",
        "*:topic_keys*.configs.unclean_leader_election_enable",
        "D6 config not implemented",
    ),
    (
        "admin.describe_configs_v*",
        "*:broker_keys*.configs.log_retention_hours",
        "D6 config not implemented (log.retention.ms only)",
    ),
    (
        "admin.describe_configs_v*",
        "*:broker_keys*.configs.log_dirs.*",
        "D6 log.dirs: each broker's own folder",
    ),
    (
        "admin.describe_configs_v*",
        "*:broker_keys*.configs.*.read_only",
        "D6 no dynamic broker configs: every broker config is read-only",
    ),
    (
        "admin.describe_configs_v*",
        "*:broker_keys*.configs.auto_create_topics_enable.*",
        "D6 the harness sets it on Kafka, muster's default",
    ),
    ("admin.create_topics_v[567]", "*:validate_only*.configs", "D7 validate_only: no configs"),
    ("admin.create_topics_v7", "*:validate_only*.topic_id", "D7 no topic id for validate_only"),
    (
        "admin.incremental_alter_configs_v*",
        "*:bad_op.*error_code",
        "D8 Kafka bug: unknown operation is UNKNOWN_SERVER_ERROR",
    ),
    ("data.fetch_v*", "*:bad_isolation*", "D8 Kafka bug: unknown isolation level"),
    ("data.metadata_v[0-3]", "*:unknown*", "D9 Metadata v0-v3 auto-creation"),
    ("data.produce_v*", "*:unknown_topic*", "D10 muster auto-creates on Produce"),
    ("security.acls_v*", "*:describe_unknown_type*", "D11 Kafka closes on an UNKNOWN filter"),
    (
        "quotas.store",
        "*.entries[[]*[]].error_code",
        "D12 muster keeps no client quotas: an entry Kafka accepts is refused",
    ),
    *[
        ("quotas.store", f"*:{label}.entries*", "D12 muster keeps no client quotas: none described")
        for label in ("describe_v[01]_*", "after_removals")
    ],
]


def explain(scenario: str, path: str) -> str | None:
    for sc, pt, reason in DOCUMENTED:
        if fnmatch.fnmatch(scenario, sc) and fnmatch.fnmatch(path, pt):
            return reason
    return None
