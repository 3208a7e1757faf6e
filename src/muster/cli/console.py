"""`muster console`: the web console against any Kafka-protocol broker."""

from __future__ import annotations

from typing import Annotated

import typer

from muster.cli._common import BOOTSTRAP_DEFAULT, BootstrapOption, fail, out
from muster.cli.security import CommandConfig


def register(app: typer.Typer) -> None:
    app.command("console")(console)


def console(
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    listen: Annotated[
        str, typer.Option("--listen", metavar="HOST:PORT", help="Where the console serves HTTP.")
    ] = "127.0.0.1:8080",
    command_config: CommandConfig = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="No actions (offset resets, deletions).")
    ] = False,
) -> None:
    """Serve the web console: groups, why they rebalance, lag, topics, messages."""
    try:
        from muster.console.app import create_app
        from muster.console.run import parse_listen, run_forever
    except ImportError as exc:
        fail(f"`muster console` needs {exc.name}: pip install 'muster[console]'")
    from muster.config import parse_properties_file

    conf: dict[str, str] = {"bootstrap.servers": bootstrap}
    if command_config is not None:
        conf.update(parse_properties_file(command_config))
    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        fail(str(exc))
    out().print(f"muster console on http://{host}:{port}/ for {bootstrap}")
    run_forever(create_app(conf, read_only=read_only), host, port)
