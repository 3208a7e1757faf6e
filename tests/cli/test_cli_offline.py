"""CLI parsing, help and configuration errors: no broker needed."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from muster.cli.main import app
from muster.cli.serve import properties_epilog
from muster.config import PROPERTIES, BrokerConfig, ConfigError
from tests.support.brokers import free_port, wait_for_port


def squash(text: str) -> str:
    """Collapses whitespace and table borders, so wrapped help text compares."""
    return re.sub(r"[\s│]+", " ", text)


@pytest.fixture
def fake_broker(monkeypatch: pytest.MonkeyPatch) -> list[BrokerConfig]:
    """Replaces muster.server.broker with a stub that records the config."""
    calls: list[BrokerConfig] = []
    module = types.ModuleType("muster.server.broker")

    def run(config: BrokerConfig) -> None:
        calls.append(config)

    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "muster.server.broker", module)
    return calls


def test_top_level_help_lists_commands(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("serve", "topics", "produce", "consume"):
        assert command in result.stdout


def test_topics_help_lists_subcommands(runner: CliRunner) -> None:
    result = runner.invoke(app, ["topics", "--help"])
    assert result.exit_code == 0
    for command in ("create", "list", "describe", "delete"):
        assert command in result.stdout


def test_serve_help_documents_every_property(runner: CliRunner) -> None:
    result = runner.invoke(app, ["serve", "--help"])
    assert result.exit_code == 0, result.output
    text = squash(result.stdout)
    for option in ("--data-dir", "--listen", "--config", "--set"):
        assert option in text
    for prop in PROPERTIES:
        assert prop.name in text, prop.name
        assert squash(prop.doc) in text, prop.name
        default = str(prop.default).lower() if isinstance(prop.default, bool) else prop.default
        # a default longer than the line is folded by rich: compared without spaces
        shown = f"default:{default if default != '' else chr(34) * 2})".replace(" ", "")
        assert shown in text.replace(" ", ""), prop.name


def test_properties_epilog_is_generated_from_the_table() -> None:
    epilog = properties_epilog()
    entries = re.findall(r"^  \[bold cyan\](\S+)\[/\]", epilog, flags=re.MULTILINE)
    assert sorted(entries) == sorted(p.name for p in PROPERTIES)


def test_properties_epilog_groups_by_area_and_wraps_with_an_indent() -> None:
    epilog = properties_epilog(width=60)
    lines = epilog.splitlines()
    assert "[bold]Consumer groups and offsets[/bold]" in lines
    plain = [re.sub(r"\[/?[a-z ]*\]", "", line) for line in lines]
    # only a line holding one unbreakable word (a long default) may run over
    assert all(len(line) <= 60 or len(line.split()[-1]) > 30 for line in plain)
    for line in lines[1:]:  # a property starts at 2, its wrapped text continues at 6
        if line and not line.startswith("[bold]"):
            assert line.startswith(("  [bold cyan]", "      ")), line


def test_serve_defaults(runner: CliRunner, fake_broker: list[BrokerConfig]) -> None:
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    (config,) = fake_broker
    assert config["log.dirs"] == "./muster-data"
    assert config.listen == ("127.0.0.1", 9092)


def test_serve_options_file_and_overrides(
    runner: CliRunner, fake_broker: list[BrokerConfig], tmp_path: Path
) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# comment\nnum.partitions=3\nlog.dirs=/from/file\nmessage.max.bytes=1000\n")
    result = runner.invoke(
        app,
        [
            "serve",
            "--config",
            str(props),
            "--set",
            "message.max.bytes=2000",
            "--set",
            "group.initial.rebalance.delay.ms=0",
            "--data-dir",
            str(tmp_path / "d"),
            "--listen",
            "127.0.0.1:19093",
        ],
    )
    assert result.exit_code == 0, result.output
    (config,) = fake_broker
    assert config["num.partitions"] == 3  # from the file
    assert config["message.max.bytes"] == 2000  # --set beats the file
    assert config["group.initial.rebalance.delay.ms"] == 0
    assert config["log.dirs"] == str(tmp_path / "d")  # --data-dir beats the file
    assert config["listeners"] == "PLAINTEXT://127.0.0.1:19093"


def test_serve_file_values_survive_without_explicit_options(
    runner: CliRunner, fake_broker: list[BrokerConfig], tmp_path: Path
) -> None:
    props = tmp_path / "server.properties"
    props.write_text("log.dirs=/from/file\nlisteners=PLAINTEXT://127.0.0.1:9999\n")
    result = runner.invoke(app, ["serve", "--config", str(props)])
    assert result.exit_code == 0, result.output
    (config,) = fake_broker
    assert config["log.dirs"] == "/from/file"
    assert config.listen == ("127.0.0.1", 9999)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "no.such.property=1"], "unknown property 'no.such.property'"),
        (["--set", "num.partitions=many"], "num.partitions: cannot read 'many' as int"),
        (["--set", "auto.create.topics.enable=maybe"], "auto.create.topics.enable"),
        (["--set", "num.partitions"], "--set expects key=value"),
    ],
)
def test_serve_config_errors_exit_2(
    runner: CliRunner, fake_broker: list[BrokerConfig], args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["serve", *args])
    assert result.exit_code == 2, result.output
    assert message in squash(result.stderr)
    assert "Traceback" not in result.output
    assert fake_broker == []


def test_serve_bad_config_file_line_exits_2(
    runner: CliRunner, fake_broker: list[BrokerConfig], tmp_path: Path
) -> None:
    props = tmp_path / "bad.properties"
    props.write_text("this line has no separator\n")
    result = runner.invoke(app, ["serve", "--config", str(props)])
    assert result.exit_code == 2
    assert "line without '='" in squash(result.stderr)
    assert fake_broker == []


def test_serve_missing_config_file_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["serve", "--config", str(tmp_path / "absent.properties")])
    assert result.exit_code == 2
    assert "does not exist" in squash(result.output)


@pytest.mark.parametrize("listen", ["nohostport", "127.0.0.1:http", "127.0.0.1:70000"])
def test_serve_bad_listen_exits_2(runner: CliRunner, listen: str) -> None:
    result = runner.invoke(app, ["serve", "--listen", listen])
    assert result.exit_code == 2
    assert "HOST:PORT" in squash(result.output)


def test_serve_without_broker_module(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "muster.server.broker", None)
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 1
    assert "not available" in result.stderr
    assert "Traceback" not in result.output


def test_serve_ctrl_c_is_a_clean_exit(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    module: Any = types.ModuleType("muster.server.broker")

    def run(config: BrokerConfig) -> None:
        raise KeyboardInterrupt

    module.run = run
    monkeypatch.setitem(sys.modules, "muster.server.broker", module)
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["consume", "t", "--offset", "middle"],
        ["consume", "t", "--max-messages", "0"],
        ["produce", "t", "--header", "novalue", "x"],
        ["produce", "t", "--key", "k", "--key-separator", ":", "x"],
        ["produce", "t", "--partition", "-1", "x"],
        ["topics", "create", "t", "--partitions", "0"],
        ["topics", "create", "t", "--config", "cleanup.policy"],
        ["topics", "describe"],
    ],
)
def test_usage_errors_exit_2(runner: CliRunner, args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["topics", "list"],
        ["topics", "describe", "t"],
        ["topics", "create", "t"],
        ["consume", "t", "--timeout", "1"],
        ["produce", "t", "x"],
        ["groups", "list"],
        ["groups", "describe", "g"],
        ["groups", "explain", "g"],
    ],
)
def test_unreachable_broker_is_one_line_error(runner: CliRunner, args: list[str]) -> None:
    """Nothing listens: one line naming the address and the refusal, within 2 s even
    though the request timeout (10 s by default) is far longer."""
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = runner.invoke(app, [*args, "--bootstrap-server", address])
    elapsed = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot connect to {address} (connection refused)")
    assert elapsed < 2.0


def test_console_script_and_module_entry_points() -> None:
    script = Path(sys.executable).parent / "muster"
    for argv in ([str(script), "--help"], [sys.executable, "-m", "muster.cli", "--help"]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "serve" in done.stdout and "topics" in done.stdout


def test_serve_config_error_from_the_broker_exits_2(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    module: Any = types.ModuleType("muster.server.broker")

    def run(config: BrokerConfig) -> None:
        raise ConfigError("listeners: cannot bind")

    module.run = run
    monkeypatch.setitem(sys.modules, "muster.server.broker", module)
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "configuration: listeners: cannot bind" in result.stderr


def test_serve_runs_until_sigterm(tmp_path: Path) -> None:
    """The real broker behind `muster serve`: listens, then stops cleanly on SIGTERM."""
    port = free_port()
    argv = [sys.executable, "-m", "muster.cli", "serve", "--data-dir", str(tmp_path / "data")]
    argv += ["--listen", f"127.0.0.1:{port}", "--set", "group.initial.rebalance.delay.ms=0"]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        wait_for_port(port, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("args", "command"),
    [(["analyze", "--out", "report"], "analyze"), (["demo", "--exit"], "demo")],
)
def test_spark_commands_name_the_extra_when_spark_is_missing(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, args: list[str], command: str
) -> None:
    """`pip install muster` has no Spark: the Spark commands say which extra adds it,
    before they touch a broker or the disk."""
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert squash(result.stderr).strip() == (
        f"error: `muster {command}` needs Spark, which this installation lacks: "
        "pip install 'muster[spark]'"
    )


@pytest.mark.parametrize(
    "command",
    [[], ["serve"], ["produce"], ["consume"], ["demo"], ["analyze"], ["groups", "explain"]],
)
def test_help_shows_no_value_placeholder_for_flags(runner: CliRunner, command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "--help" in result.stdout
    assert "<bool>" not in result.stdout
