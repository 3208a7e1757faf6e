"""`muster serve`: run the broker in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from muster.cli._common import fail
from muster.config import PROPERTIES, ConfigError, load_config

DEFAULT_DATA_DIR = "./muster-data"
DEFAULT_LISTEN = "127.0.0.1:9092"

HELP = """Run the muster broker in the foreground until SIGTERM or SIGINT (Ctrl-C).

Settings come from Kafka's own broker property names: first the --config
file (server.properties style), then each --set, then --data-dir and --listen.
"""


def _show(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value == "":
        return '""'
    return str(value)


def properties_epilog() -> str:
    """Documents every property of `muster.config.PROPERTIES` (rich markup)."""
    lines = [
        "[bold]Broker properties[/bold] (use in --config FILE as name=value, "
        "or on the command line as --set name=value):",
        "",
    ]
    for prop in PROPERTIES:
        lines.append(
            f"[bold cyan]{escape(prop.name)}[/] [dim]({prop.kind.__name__}, "
            f"default: {escape(_show(prop.default))})[/dim]"
        )
        lines.append(f"    {escape(prop.doc)}")
    return "\n".join(lines)


def parse_listen(value: str | None) -> str | None:
    if value is None:
        return None
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise typer.BadParameter(f"expected HOST:PORT, got {value!r}")
    return f"{host}:{int(port)}"


def serve(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            metavar="DIR",
            file_okay=False,
            help=f"Data directory (log.dirs). Default: {DEFAULT_DATA_DIR}",
            show_default=False,
        ),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            metavar="HOST:PORT",
            callback=parse_listen,
            help=f"Where to listen (listeners). Default: {DEFAULT_LISTEN}",
            show_default=False,
        ),
    ] = None,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            exists=True,
            dir_okay=False,
            readable=True,
            help="server.properties-style file of broker properties.",
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Set one broker property; repeatable. See the list below.",
        ),
    ] = None,
) -> None:
    explicit = {}
    if data_dir is not None:
        explicit["log.dirs"] = str(data_dir)
    if listen is not None:
        explicit["listeners"] = f"PLAINTEXT://{listen}"
        # A config file's advertised.listeners names its own port; --listen
        # replaces both unless advertised.listeners is set on the command line.
        if not any(o.strip().startswith("advertised.listeners=") for o in overrides or ()):
            explicit["advertised.listeners"] = ""
    try:
        config = load_config(config_file, overrides or (), **explicit)
    except ConfigError as exc:
        fail(f"configuration: {exc}", code=2)
    except OSError as exc:
        fail(f"configuration: cannot read {config_file}: {exc.strerror or exc}", code=2)

    try:
        from muster.server.broker import run
        from muster.server.startup import StartupError
    except ModuleNotFoundError as exc:
        if exc.name not in ("muster.server.broker", "muster.server"):
            raise
        fail("the broker (muster.server.broker) is not available in this installation")

    from muster.log.port import UnreadableLogError

    try:
        run(config)
    except ConfigError as exc:  # settings the broker refuses once it looks closer
        fail(f"configuration: {exc}", code=2)
    except (StartupError, UnreadableLogError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        pass


def register(app: typer.Typer) -> None:
    app.command("serve", help=HELP, epilog=properties_epilog())(serve)
