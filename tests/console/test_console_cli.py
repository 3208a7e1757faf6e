"""`muster console` on the command line, without a broker."""

from __future__ import annotations

from typer.testing import CliRunner

from muster.cli.main import app


def test_console_help_names_its_options() -> None:
    result = CliRunner().invoke(app, ["console", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    for option in ("--bootstrap-server", "--listen", "--command-config", "--read-only"):
        assert option in result.stdout
    assert "<bool>" not in result.stdout


def test_console_refuses_a_bad_listen_address() -> None:
    result = CliRunner().invoke(app, ["console", "--listen", "nonsense"])
    assert result.exit_code == 1
    assert "HOST:PORT" in result.output
