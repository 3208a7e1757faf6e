"""`muster serve`: run the broker in the foreground."""

from __future__ import annotations

import shutil
import textwrap
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


# `muster serve --help` lists the properties by area: the first prefix that
# matches a name decides (the order of areas is the order shown).
AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Broker and listeners", ("node.id", "listeners", "advertised.", "cluster.id")),
    ("Topics and requests",
     ("auto.create.", "num.partitions", "default.repl", "message.", "socket.")),
    ("Log storage and retention", ("log.",)),
    ("Connections", ("connections.max.idle", "max.")),
    ("Consumer groups and offsets", ("group.", "offsets.")),
    ("Transactions", ("transaction.",)),
    ("Security: listeners, TLS, SASL, ACLs", ("listener.", "inter.", "controller.", "security.",
     "sasl.", "ssl.", "connections.max.reauth", "authorizer.", "super.users", "allow.")),
    ("muster's own", ("muster.",)),
)  # fmt: skip


def area_of(name: str) -> str:
    for area, prefixes in AREAS:
        if any(name.startswith(p) for p in prefixes):
            return area
    return "Other"


def _width() -> int:
    # typer's rich console pads the epilog by one column each side
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 120) - 2)


def properties_epilog(width: int | None = None) -> str:
    """Documents every property of `muster.config.PROPERTIES` by area (rich
    markup), each wrapped to the terminal with its continuation lines indented."""
    width = width or _width()
    by_area: dict[str, list[str]] = {}
    for prop in PROPERTIES:
        head = f"{prop.name} ({prop.kind.__name__}, default: {_show(prop.default)}): "
        lines = textwrap.wrap(
            head + prop.doc,
            width,
            initial_indent="  ",
            subsequent_indent="      ",
            break_long_words=False,  # a long default stays whole (rich folds it)
            break_on_hyphens=False,
        )
        first, _, rest = lines[0].partition(prop.name)
        lines[0] = f"{first}[bold cyan]{escape(prop.name)}[/]{escape(rest)}"
        lines[1:] = [escape(line) for line in lines[1:]]
        by_area.setdefault(area_of(prop.name), []).extend(lines)
    out = [
        "[bold]Broker properties[/bold], for --config FILE or --set name=value:",
    ]
    for area in [a for a, _ in AREAS] + ["Other"]:
        if area in by_area:
            out += ["", f"[bold]{area}[/bold]", *by_area[area]]
    return "\n".join(out)


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
            help=f"Data directory (log.dirs), created if missing. Default: {DEFAULT_DATA_DIR}",
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
