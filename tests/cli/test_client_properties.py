"""Client properties of `-X key=value` and `--command-config FILE`: a misspelt
name is caught before anything connects, and named with its closest librdkafka or
Kafka client property, in one or two lines and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from muster.cli.main import app
from tests.support.brokers import free_port

COMMANDS = [
    ["topics", "list"],
    ["produce", "t", "x"],
    ["consume", "t", "--timeout", "1"],
    ["groups", "describe", "g"],
    ["acls", "list"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_unknown_x_property_is_refused_with_the_closest_name(
    runner: CliRunner, command: list[str]
) -> None:
    """As kcat refuses an unknown -X: exit 1, one line, naming the likely typo's fix."""
    address = f"127.0.0.1:{free_port()}"
    result = runner.invoke(app, [*command, "-b", address, "-X", "sasl.usrname=alice"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) <= 2, result.stderr
    text = " ".join(lines)
    assert text.startswith("error: -X sasl.usrname: unknown client property"), text
    assert "did you mean 'sasl.username'?" in text
    assert "Traceback" not in result.output


def test_unknown_x_property_without_a_close_name_is_refused_plainly(runner: CliRunner) -> None:
    address = f"127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["topics", "list", "-b", address, "-X", "colour=blue"])
    assert result.exit_code == 1
    assert "error: -X colour: unknown client property" in result.stderr
    assert "did you mean" not in result.stderr


@pytest.mark.parametrize(
    "name", ["security.protocol", "ssl.ca.location", "linger.ms", "ssl.truststore.location"]
)
def test_known_client_properties_pass_to_the_client(runner: CliRunner, name: str) -> None:
    """librdkafka's and Java's names are accepted: the command gets as far as connecting."""
    address = f"127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["topics", "list", "-b", address, "-X", f"{name}=x"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: cannot connect to {address}"), result.stderr


def test_unknown_name_in_command_config_is_warned_about_and_skipped(
    runner: CliRunner, tmp_path: Path
) -> None:
    """As Kafka's tools log an unknown name in a --command-config file and go on."""
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=PLAINTEXT\nsasl.mechansim=PLAIN\n")
    address = f"127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["topics", "list", "-b", address, "--command-config", str(config)])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[0] == (
        f"warning: --command-config {config}: unknown client property 'sasl.mechansim' "
        "(did you mean 'sasl.mechanism'?), ignored"
    )
    # then it goes on, as far as the (absent) broker
    assert lines[1].startswith(f"error: cannot connect to {address}")
