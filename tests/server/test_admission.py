"""Connection caps with Kafka's names: max.connections.per.ip (and its
overrides) and max.connections; a refused connection frees nothing, a closed
one frees its slot."""

from __future__ import annotations

import pytest

from muster.config import BrokerConfig, ConfigError
from muster.server.admission import Admission, parse_overrides


def _admission(**settings: str) -> Admission:
    config = BrokerConfig()
    for key, value in settings.items():
        config.set(key.replace("_", "."), value)
    return Admission(config)


def test_per_ip_cap_refuses_past_it_and_a_close_frees_a_slot() -> None:
    adm = _admission(max_connections_per_ip="2")
    assert adm.admit("10.0.0.1") is None
    assert adm.admit("10.0.0.1") is None
    refused = adm.admit("10.0.0.1")
    assert refused is not None and "maximum of 2 connections" in refused
    assert adm.admit("10.0.0.2") is None  # another address has its own count
    adm.release("10.0.0.1")
    assert adm.admit("10.0.0.1") is None
    assert adm.refused == 1 and adm.total == 3


def test_override_raises_or_lowers_one_address_cap() -> None:
    adm = _admission(max_connections_per_ip="1")
    adm.overrides = parse_overrides("127.0.0.1:3, badhost:0")
    assert [adm.admit("127.0.0.1") for _ in range(4)][-1] is not None
    assert adm.admit("badhost") is not None
    assert adm.admit("elsewhere") is None


def test_total_cap_counts_every_address() -> None:
    adm = _admission(max_connections="3")
    assert [adm.admit(f"10.0.0.{i}") for i in range(3)] == [None, None, None]
    refused = adm.admit("10.0.0.9")
    assert refused is not None and "broker already has" in refused


def test_defaults_are_kafkas_unbounded_caps() -> None:
    adm = _admission()
    assert adm.per_ip_cap == adm.total_cap == 2**31 - 1 and adm.overrides == {}


@pytest.mark.parametrize("text", ["127.0.0.1", "host:x", ":3"])
def test_unreadable_overrides_are_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_overrides(text)
