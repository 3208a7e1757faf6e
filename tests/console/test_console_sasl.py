"""The console against a secured broker: it logs in with SASL/PLAIN as the
CLI's client properties say, and shows only what that principal may describe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from starlette.testclient import TestClient

from muster.console.app import create_app
from muster.security.properties import STANDARD_AUTHORIZER
from tests.support.brokers import MusterProcess
from tests.support.security import ADMIN, ADMIN_PW, secured_settings

PASSWORDS = {ADMIN: ADMIN_PW, "alice": "alice-secret"}
PRE, ALLOW = ResourcePatternType.PREFIXED, AclPermissionType.ALLOW


def conf(broker: MusterProcess, user: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.address("SASL_PLAINTEXT"),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
    }


def commit(broker: MusterProcess, user: str, group: str, topic: str) -> None:
    consumer = Consumer({**conf(broker, user), "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[MusterProcess]:
    settings = secured_settings(
        certs, **{"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": f"User:{ADMIN}"}
    )
    proc = MusterProcess(
        tmp_path_factory.mktemp("console-sasl") / "data",
        settings,
        {"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
    ).start()
    try:
        admin = AdminClient(conf(proc, ADMIN))
        acls = [
            AclBinding(ResourceType.TOPIC, "alice-", PRE, "User:alice", "*", op, ALLOW)
            for op in (AclOperation.READ, AclOperation.DESCRIBE)
        ] + [
            AclBinding(ResourceType.GROUP, "alice-", PRE, "User:alice", "*", op, ALLOW)
            for op in (AclOperation.READ, AclOperation.DESCRIBE)
        ]
        for future in admin.create_acls(acls).values():
            future.result(20)
        for future in admin.create_topics(
            [NewTopic("alice-orders", 1, 1), NewTopic("secret-topic", 1, 1)]
        ).values():
            future.result(20)
        commit(proc, "alice", "alice-group", "alice-orders")
        commit(proc, ADMIN, "secret-group", "secret-topic")
        yield proc
    finally:
        proc.close()


def test_console_shows_only_what_alice_may_describe(broker: MusterProcess) -> None:
    with TestClient(create_app(conf(broker, "alice"))) as http:
        topics = http.get("/topics").text
        assert "alice-orders" in topics and "secret-topic" not in topics
        groups = http.get("/groups").text
        assert "alice-group" in groups and "secret-group" not in groups
        group = http.get("/groups/alice-group")
        assert group.status_code == 200 and "alice-orders" in group.text
        assert http.get("/").status_code == 200
