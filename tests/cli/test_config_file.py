"""Kafka's property files as muster reads them: no broker needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from muster.config import ConfigError, load_config, plaintext_listener


def test_kafka_coarse_units_become_muster_milliseconds(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("log.retention.hours=168\nlog.roll.hours=2\nbroker.id=7\n")
    cfg = load_config(props)
    assert cfg["log.retention.ms"] == 168 * 3_600_000
    assert cfg["log.roll.ms"] == 2 * 3_600_000
    assert cfg["node.id"] == 7
    assert cfg.ignored == []


def test_the_finer_unit_wins_as_in_kafka(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("log.retention.hours=168\nlog.retention.ms=5000\n")
    assert load_config(props)["log.retention.ms"] == 5000
    props.write_text("log.retention.hours=1\nlog.retention.minutes=5\n")
    assert load_config(props)["log.retention.ms"] == 5 * 60_000


def test_unknown_names_in_a_file_are_reported_not_refused(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("process.roles=broker,controller\nnum.io.threads=8\ntypo.property=1\n")
    cfg = load_config(props)
    assert cfg.ignored_report() == [
        "ignoring Kafka properties that do not apply to muster: num.io.threads, process.roles",
        "ignoring unknown properties (see `muster serve --help`): typo.property",
    ]


def test_unknown_names_on_the_command_line_are_still_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown property 'typo\.property'"):
        load_config(None, ["typo.property=1"])


def test_a_misspelt_name_gets_kafkas_closest_name() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'auto\.create\.topics\.enable'\?"):
        load_config(None, ["auto.create.topic.enable=false"])
    props_cfg = load_config(None)
    props_cfg.set("log.retention.hour", "1", strict=False)  # Kafka's name, misspelt
    assert props_cfg.ignored_report() == [
        "ignoring unknown properties (see `muster serve --help`): "
        "log.retention.hour (did you mean 'log.retention.hours'?)"
    ]


@pytest.mark.parametrize(
    ("listeners", "expected"),
    [
        ("PLAINTEXT://:9092,CONTROLLER://:9093", ("", 9092)),
        ("CONTROLLER://localhost:9093,PLAINTEXT://localhost:9092", ("localhost", 9092)),
        ("INTERNAL://10.0.0.1:9094,CONTROLLER://:9093", ("10.0.0.1", 9094)),
        ("127.0.0.1:9092", ("127.0.0.1", 9092)),
    ],
)
def test_the_plaintext_listener_is_served(listeners: str, expected: tuple[str, int]) -> None:
    assert plaintext_listener(listeners) == expected


def test_a_controller_only_listener_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="no PLAINTEXT listener"):
        plaintext_listener("CONTROLLER://:9093")


def test_storage_must_be_disk_or_memory() -> None:
    assert load_config(None, ["muster.storage=memory"]).in_memory
    with pytest.raises(ConfigError, match="disk or memory"):
        load_config(None, ["muster.storage=tape"])
