"""`muster serve`: run the broker in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from muster.cli.serve_run import DEFAULT_DATA_DIR, DEFAULT_LISTEN, run_serve
from muster.cli.serve_run import parse_listen as parse_host_port
from muster.config import PROPERTIES

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
    try:
        return parse_host_port(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


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
    run_serve(data_dir, listen, config_file, overrides or [])


def register(app: typer.Typer) -> None:
    app.command("serve", help=HELP, epilog=properties_epilog())(serve)
