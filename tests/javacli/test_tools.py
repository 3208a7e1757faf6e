"""Kafka's command-line tools (kafka-topics, kafka-consumer-groups with every
--reset-offsets mode, kafka-configs, kafka-acls, kafka-transactions,
kafka-console-producer/consumer) run against muster and against Kafka 4.4:
the same script of commands, one JVM per broker (tests/java/ToolRunner.java),
outputs compared after the broker-specific parts (addresses, node id, topic
ids) are masked. Where muster answers differently on purpose the step is in
DIFFERENT, with what muster prints instead; conformance/DIFFERENCES.md
("Java Admin and tools") says why."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.javacli.common import Pair, both
from tests.support.java import (
    ACLS,
    CONFIGS,
    CONSOLE_CONSUMER,
    CONSOLE_PRODUCER,
    GROUPS,
    QUORUM,
    TOPICS,
    TRANSACTIONS,
    ToolSession,
    program_command,
)

T = "tools-t"
G = "tools-g"
KEYS = "".join(f"k{i}:v{i}\n" for i in range(20))


def _bob_quota(name: str, *change: str) -> tuple[str, str, tuple[str, ...], str]:
    """A kafka-configs --alter of user bob's quotas."""
    return (
        name,
        CONFIGS,
        ("--entity-type", "users", "--entity-name", "bob", "--alter", *change),
        "",
    )


# name, tool, arguments ("{csv}" is a reset plan the test writes), stdin
SCRIPT: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "create",
        TOPICS,
        (
            "--create",
            "--topic",
            T,
            "--partitions",
            "3",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=3600000",
        ),
        "",
    ),
    ("create-again", TOPICS, ("--create", "--topic", T, "--partitions", "3"), ""),
    ("create-if-not-exists", TOPICS, ("--create", "--if-not-exists", "--topic", T), ""),
    ("describe", TOPICS, ("--describe", "--topic", T), ""),
    ("alter-partitions", TOPICS, ("--alter", "--topic", T, "--partitions", "4"), ""),
    ("alter-fewer", TOPICS, ("--alter", "--topic", T, "--partitions", "2"), ""),
    ("describe-after", TOPICS, ("--describe", "--topic", T), ""),
    ("create-x", TOPICS, ("--create", "--topic", "tools-x", "--partitions", "1"), ""),
    ("delete-x", TOPICS, ("--delete", "--topic", "tools-x"), ""),
    ("create-rf3", TOPICS, ("--create", "--topic", "tools-rf3", "--replication-factor", "3"), ""),
    ("describe-under", TOPICS, ("--describe", "--under-replicated-partitions"), ""),
    ("describe-unavailable", TOPICS, ("--describe", "--unavailable-partitions"), ""),
    ("describe-nosuch", TOPICS, ("--describe", "--topic", "nosuch"), ""),
    (
        "produce",
        CONSOLE_PRODUCER,
        (
            "--topic",
            T,
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
        ),
        KEYS,
    ),
    (
        "consume",
        CONSOLE_CONSUMER,
        (
            "--topic",
            T,
            "--group",
            G,
            "--from-beginning",
            "--max-messages",
            "20",
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            "print.partition=true",
            "--formatter-property",
            "print.offset=true",
        ),
        "",
    ),
    ("list-exclude-internal", TOPICS, ("--list", "--exclude-internal"), ""),
    ("groups-list", GROUPS, ("--list",), ""),
    ("groups-list-state", GROUPS, ("--list", "--state"), ""),
    ("groups-list-type", GROUPS, ("--list", "--type"), ""),
    ("describe-offsets", GROUPS, ("--describe", "--group", G), ""),
    ("describe-members", GROUPS, ("--describe", "--group", G, "--members", "--verbose"), ""),
    ("describe-state", GROUPS, ("--describe", "--group", G, "--state"), ""),
    ("describe-all", GROUPS, ("--describe", "--all-groups"), ""),
    ("describe-group-nosuch", GROUPS, ("--describe", "--group", "nosuch"), ""),
    (
        "reset-earliest-default",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", T, "--to-earliest"),
        "",
    ),
    (
        "reset-earliest-dry",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", T, "--to-earliest", "--dry-run"),
        "",
    ),
    (
        "reset-earliest",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", T, "--to-earliest", "--execute"),
        "",
    ),
    ("after-earliest", GROUPS, ("--describe", "--group", G, "--offsets"), ""),
    (
        "reset-latest",
        GROUPS,
        ("--reset-offsets", "--group", G, "--all-topics", "--to-latest", "--execute"),
        "",
    ),
    (
        "reset-offset",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", T, "--to-offset", "2", "--execute"),
        "",
    ),
    (
        "reset-shift",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", f"{T}:0,1", "--shift-by", "-1", "--execute"),
        "",
    ),
    (
        "reset-current",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", T, "--to-current", "--dry-run"),
        "",
    ),
    (
        "reset-datetime",
        GROUPS,
        (
            "--reset-offsets",
            "--group",
            G,
            "--topic",
            T,
            "--to-datetime",
            "2000-01-01T00:00:00.000",
            "--execute",
        ),
        "",
    ),
    (
        "reset-duration",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", T, "--by-duration", "PT0S", "--execute"),
        "",
    ),
    (
        "reset-export",
        GROUPS,
        (
            "--reset-offsets",
            "--group",
            G,
            "--topic",
            T,
            "--to-offset",
            "1",
            "--dry-run",
            "--export",
        ),
        "",
    ),
    (
        "reset-from-file",
        GROUPS,
        ("--reset-offsets", "--group", G, "--from-file", "{csv}", "--execute"),
        "",
    ),
    (
        "reset-beyond-end",
        GROUPS,
        ("--reset-offsets", "--group", G, "--topic", f"{T}:2", "--to-offset", "1000", "--execute"),
        "",
    ),
    (
        "reset-new-group",
        GROUPS,
        ("--reset-offsets", "--group", f"{G}-new", "--topic", T, "--to-earliest", "--execute"),
        "",
    ),
    ("after-resets", GROUPS, ("--describe", "--group", G, "--offsets"), ""),
    ("delete-offsets", GROUPS, ("--delete-offsets", "--group", G, "--topic", f"{T}:0"), ""),
    ("delete-offsets-nosuch", GROUPS, ("--delete-offsets", "--group", G, "--topic", "nosuch"), ""),
    ("after-delete-offsets", GROUPS, ("--describe", "--group", G, "--offsets"), ""),
    ("delete-group", GROUPS, ("--delete", "--group", G), ""),
    ("delete-group-nosuch", GROUPS, ("--delete", "--group", "nosuch"), ""),
    ("list-after-delete", GROUPS, ("--list",), ""),
    ("cfg-topic", CONFIGS, ("--entity-type", "topics", "--entity-name", T, "--describe"), ""),
    (
        "cfg-alter",
        CONFIGS,
        (
            "--entity-type",
            "topics",
            "--entity-name",
            T,
            "--alter",
            "--add-config",
            "retention.ms=7200000,cleanup.policy=compact,max.message.bytes=100000",
        ),
        "",
    ),
    (
        "cfg-topic-altered",
        CONFIGS,
        ("--entity-type", "topics", "--entity-name", T, "--describe"),
        "",
    ),
    (
        "cfg-delete",
        CONFIGS,
        (
            "--entity-type",
            "topics",
            "--entity-name",
            T,
            "--alter",
            "--delete-config",
            "cleanup.policy",
        ),
        "",
    ),
    (
        "cfg-unknown",
        CONFIGS,
        (
            "--entity-type",
            "topics",
            "--entity-name",
            T,
            "--alter",
            "--add-config",
            "no.such.config=1",
        ),
        "",
    ),
    (
        "cfg-bad-value",
        CONFIGS,
        (
            "--entity-type",
            "topics",
            "--entity-name",
            T,
            "--alter",
            "--add-config",
            "retention.ms=abc",
        ),
        "",
    ),
    (
        "cfg-topic-deleted",
        CONFIGS,
        ("--entity-type", "topics", "--entity-name", T, "--describe"),
        "",
    ),
    (
        "cfg-topic-nosuch",
        CONFIGS,
        ("--entity-type", "topics", "--entity-name", "nosuch", "--describe"),
        "",
    ),
    (
        "cfg-broker-default",
        CONFIGS,
        ("--entity-type", "brokers", "--entity-default", "--describe"),
        "",
    ),
    (
        "cfg-broker-alter",
        CONFIGS,
        (
            "--entity-type",
            "brokers",
            "--entity-default",
            "--alter",
            "--add-config",
            "log.retention.ms=86400000",
        ),
        "",
    ),
    ("cfg-group", CONFIGS, ("--entity-type", "groups", "--entity-name", G, "--describe"), ""),
    ("cfg-users", CONFIGS, ("--entity-type", "users", "--describe"), ""),
    ("cfg-clients", CONFIGS, ("--entity-type", "clients", "--describe"), ""),
    (
        "cfg-scram",
        CONFIGS,
        (
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=alice-pw]",
        ),
        "",
    ),
    _bob_quota("cfg-quota", "--add-config", "producer_byte_rate=1024"),
    (
        "acl-add",
        ACLS,
        ("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", T),
        "",
    ),
    (
        "acl-add-prefixed",
        ACLS,
        (
            "--add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--group",
            "tools",
            "--resource-pattern-type",
            "prefixed",
        ),
        "",
    ),
    (
        "acl-add-producer",
        ACLS,
        (
            "--add",
            "--allow-principal",
            "User:bob",
            "--producer",
            "--topic",
            T,
            "--transactional-id",
            "tx",
            "--idempotent",
        ),
        "",
    ),
    ("acl-list", ACLS, ("--list",), ""),
    ("acl-list-topic", ACLS, ("--list", "--topic", T), ""),
    ("acl-list-principal", ACLS, ("--list", "--principal", "User:bob"), ""),
    (
        "acl-remove",
        ACLS,
        (
            "--remove",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--topic",
            T,
            "--force",
        ),
        "",
    ),
    ("acl-list-after", ACLS, ("--list", "--topic", T), ""),
    ("txn-list", TRANSACTIONS, ("list",), ""),
    ("txn-describe-nosuch", TRANSACTIONS, ("describe", "--transactional-id", "nosuch"), ""),
    ("txn-producers", TRANSACTIONS, ("describe-producers", "--topic", T, "--partition", "0"), ""),
    # late in the script: Kafka applies cfg-quota through its controller
    (
        "cfg-quota-describe",
        CONFIGS,
        ("--entity-type", "users", "--entity-name", "bob", "--describe"),
        "",
    ),
    ("cfg-users-after", CONFIGS, ("--entity-type", "users", "--describe"), ""),
    # and removed, so the Kafka shared with other tests keeps no quota
    _bob_quota("cfg-quota-delete", "--delete-config", "producer_byte_rate"),
    ("quorum-status", QUORUM, ("describe", "--status"), ""),
    ("quorum-replication", QUORUM, ("describe", "--replication"), ""),
]

NOT_KEPT = (
    "InvalidRequestException: muster does not throttle clients, so it keeps no client quotas"
    " (conformance/DIFFERENCES.md D12)"
)
# Steps where muster answers otherwise, each with a check of muster's own answer.
# The reasons are in conformance/DIFFERENCES.md, "Java Admin and tools".
DIFFERENT: dict[str, Any] = {
    # Kafka's own wording of the same error class (exit code and exception agree)
    "create-again": lambda r: "already exists" in r["out"],
    "alter-fewer": lambda r: "partitions" in r["out"],
    "create-rf3": lambda r: "replication factor 3" in r["out"],
    "cfg-unknown": lambda r: "InvalidConfigurationException" in r["err"],
    "cfg-bad-value": lambda r: "InvalidConfigurationException" in r["err"],
    # muster keeps broker configs static (its settings file): no dynamic defaults
    "cfg-broker-default": lambda r: (
        r["out"].strip() == "Default configs for brokers in the cluster are:"
    ),
    "cfg-broker-alter": lambda r: "only topic configs can be altered" in r["err"],
    # muster does not serve ListConfigResources (74): kafka-configs then cannot
    # tell a group without configs from a missing one and describes it, empty
    "cfg-group": lambda r: r["out"].strip() == f"Dynamic configs for group {G} are:",
    # muster does not throttle clients, so it keeps no client quotas: the quota
    # is refused with words that say so, and bob has none to describe
    "cfg-quota": lambda r: NOT_KEPT in r["err"],
    "cfg-quota-describe": lambda r: r["out"].strip() == "",
    "cfg-users-after": lambda r: (
        "Quota configs" not in r["out"]
        and "user-principal 'alice' are SCRAM-SHA-256=iterations=8192" in r["out"]
    ),
    # kafka-configs reads bob's quotas before it deletes one, finds none, and
    # stops without sending AlterClientQuotas
    "cfg-quota-delete": lambda r: "Invalid config(s): producer_byte_rate" in r["err"],
}
# Exit codes that differ as well (the tool succeeds on Kafka, fails on muster)
EXIT_DIFFERS = {
    "cfg-broker-alter",
    "cfg-quota",
    "cfg-quota-delete",
}
# kafka-acls prints the ACLs of a resource in the order of a hash set
# and kafka-consumer-groups --describe --all-groups the groups in the order of one
UNORDERED = {name for name, tool, _, _ in SCRIPT if tool == ACLS} | {
    "describe-all",
    "cfg-users-after",
}


def mask(text: str, name: str = "") -> str:
    """What differs between two correct single-node brokers: addresses, the node
    id (muster is node 0, Kafka node 1), topic ids, client ids, timestamps;
    the cluster-wide min.insync.replicas=1 Kafka's controller sets, and the
    synonyms of each config."""
    text = re.sub(r"127\.0\.0\.1:\d+", "ADDR", text)
    text = re.sub(r"TopicId: \S+", "TopicId: ID", text)
    text = re.sub(r"\((?:0|1)\)", "(NODE)", text)
    text = re.sub(r"(Leader|Replicas|Isr): [01]\b", r"\1: NODE", text)
    text = re.sub(r"min\.insync\.replicas=1,?", "", text)
    text = re.sub(r"synonyms=\{[^}]*\}", "synonyms={}", text)
    text = re.sub(r"(console-consumer|consumer)-[\w-]+", "CLIENT", text)
    text = re.sub(r"/127\.0\.0\.1", "HOST", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID", text)
    text = re.sub(r"\tat [^\n]*\n", "", text)  # stack frames
    if name == "txn-list":  # the coordinator's node id and producer ids differ, order too
        text = "\n".join(
            sorted(
                f"{cols[0]} {cols[3]}"
                for cols in ([c.strip() for c in line.split("\t")] for line in text.splitlines())
                if len(cols) >= 4
            )
        )
    if name == "txn-producers":  # producer ids and timestamps differ
        text = "\n".join(
            " ".join(cols[i] for i in (1, 2, 3, 5) if i < len(cols))
            for cols in ([c.strip() for c in line.split("\t")] for line in text.splitlines())
        )
    if name.startswith("quorum-"):
        # the node id, the metadata log's position (muster keeps no metadata log:
        # its high watermark is 0), clocks, and the listener: Kafka's CONTROLLER,
        # muster's own (the broker is its controller)
        text = re.sub(r"(ClusterId|LeaderId|HighWatermark):(\s+)\S+", r"\1:\2X", text)
        text = re.sub(r'"id": [01]', '"id": NODE', text)
        text = re.sub(r'"\w+://ADDR"', '"LISTENER://ADDR"', text)
        rows = [[c.strip() for c in line.split("\t")] for line in text.splitlines()]
        for row in rows[1:] if name == "quorum-replication" else ():
            if len(row) > 5:  # NodeId, LogEndOffset, LastFetch-, LastCaughtUpTimestamp
                row[0], row[2], row[4], row[5] = "NODE", "LEO", "T", "T"
        if name == "quorum-replication":
            text = "\n".join("\t".join(row) for row in rows)
    if name in UNORDERED:
        text = "\n".join(sorted(line.strip() for line in text.splitlines()))
    return text


def run_script(bootstrap: str, tmp: Path) -> dict[str, dict[str, Any]]:
    plan = tmp / f"plan-{bootstrap.rsplit(':', 1)[1]}.csv"
    plan.write_text(f"{T},0,3\n{T},1,1\n")
    session = ToolSession(bootstrap)
    try:
        answers = {}
        for name, tool, args, stdin in SCRIPT:
            args = tuple(str(plan) if a == "{csv}" else a for a in args)
            answers[name] = session.run(tool, *args, stdin=stdin)
        return answers
    finally:
        session.close()


def test_tools_answer_on_muster_as_on_kafka(pair: Pair, tmp_path: Path) -> None:
    answers = both(pair, run_script, tmp_path)
    muster, kafka = answers["muster"], answers["kafka"]
    assert set(DIFFERENT) <= set(muster)
    mismatched = []
    for name, _, _, _ in SCRIPT:
        m, k = muster[name], kafka[name]
        if name in DIFFERENT:
            if (m["code"] != k["code"]) != (name in EXIT_DIFFERS):
                mismatched.append((name, "exit code", m, k))
            elif not DIFFERENT[name](m):
                mismatched.append((name, "muster's documented answer", m, k))
            continue
        same = (m["code"], mask(m["out"], name), mask(m["err"])) == (
            k["code"],
            mask(k["out"], name),
            mask(k["err"]),
        )
        if not same:
            mismatched.append((name, "differs from Kafka", m, k))
    report = "\n\n".join(
        f"== {name}: {why}\n-- muster ({m['code']}):\n{m['out']}{m['err'][:1500]}"
        f"\n-- kafka ({k['code']}):\n{k['out']}{k['err'][:1500]}"
        for name, why, m, k in mismatched
    )
    assert not mismatched, report
    # and what the script did, said once
    consumed = sorted(muster["consume"]["out"].splitlines())
    assert len(consumed) == 20
    after = [line.split() for line in muster["after-resets"]["out"].splitlines()]
    assert [G, T, "0", "3"] == after[2][:4] or [G, T, "0", "3"] in [row[:4] for row in after]


def _live_consumer(bootstrap: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        program_command(
            CONSOLE_CONSUMER,
            "--bootstrap-server",
            bootstrap,
            "--topic",
            T,
            "--group",
            "tools-live",
            "--timeout-ms",
            "60000",
            "--consumer-property",
            "client.id=live-client",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def describe_live(bootstrap: str) -> dict[str, dict[str, Any]]:
    """kafka-consumer-groups on a group with a member: --members --verbose,
    --offsets, --state, and a reset refused while the member is there."""
    consumer = _live_consumer(bootstrap)
    session = ToolSession(bootstrap)
    try:
        deadline = time.monotonic() + 60
        while True:
            members = session.run(
                GROUPS, "--describe", "--group", "tools-live", "--members", "--verbose"
            )
            if "live-client" in members["out"] and "tools-t:" in members["out"]:
                break
            assert time.monotonic() < deadline, members
            time.sleep(0.5)
        return {
            "members": members,
            "offsets": session.run(GROUPS, "--describe", "--group", "tools-live", "--offsets"),
            "state": session.run(GROUPS, "--describe", "--group", "tools-live", "--state"),
            "reset": session.run(
                GROUPS,
                "--reset-offsets",
                "--group",
                "tools-live",
                "--topic",
                T,
                "--to-earliest",
                "--execute",
            ),
            "delete": session.run(GROUPS, "--delete", "--group", "tools-live"),
        }
    finally:
        consumer.kill()
        consumer.wait()
        session.close()


def test_consumer_groups_describes_a_live_member(pair: Pair) -> None:
    answers = both(pair, describe_live)
    for name in ("members", "offsets", "state", "reset", "delete"):
        m, k = answers["muster"][name], answers["kafka"][name]
        assert (m["code"], mask(m["out"]), mask(m["err"])) == (
            k["code"],
            mask(k["out"]),
            mask(k["err"]),
        ), f"{name}\n-- muster:\n{m['out']}{m['err']}\n-- kafka:\n{k['out']}{k['err']}"
    members = answers["muster"]["members"]["out"]
    assert "live-client" in members and "tools-t:0,1,2,3" in members
    assert "Stable" in answers["muster"]["state"]["out"]
    assert "inactive" in answers["muster"]["reset"]["out"] + answers["muster"]["reset"]["err"]
