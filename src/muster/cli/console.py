"""`muster console`: the web console against any Kafka-protocol broker."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from muster.cli._common import (
    BOOTSTRAP_DEFAULT,
    BootstrapOption,
    CommandConfigOption,
    PropertyOption,
    client_props,
    fail,
    out,
)


def register(app: typer.Typer) -> None:
    app.command("console")(console)


def console(
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    listen: Annotated[
        str, typer.Option("--listen", metavar="HOST:PORT", help="Where the console serves HTTP.")
    ] = "127.0.0.1:8080",
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
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
    conf: dict[str, str] = {"bootstrap.servers": bootstrap}
    conf.update(client_props(command_config, properties))
    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        fail(str(exc))
    out().print(f"muster console on http://{host}:{port}/ for {bootstrap}")
    run_forever(create_app(conf, read_only=read_only), host, port)


def run_broker_with_console(config: Any) -> None:
    """`muster serve` with `muster.console.listen` set: the broker, and the
    console as a task on its event loop, reading it over its first listener."""
    import asyncio
    import logging

    from muster.server.broker import loop_factory, serve_until_signalled, setup_logging
    from muster.server.startup import StartupError

    try:
        from muster.console.embed import RunningConsole, start_console
    except ImportError as exc:
        raise StartupError(
            f"muster.console.listen is set, but the console needs {exc.name}: "
            "pip install 'muster[console]'"
        ) from None

    setup_logging(config["muster.log.level"])
    running: list[RunningConsole] = []

    async def ready(broker: Any) -> None:
        conf = {"bootstrap.servers": f"127.0.0.1:{broker.port}", "client.id": "muster-console"}
        listen = config["muster.console.listen"]
        try:
            running.append(
                await start_console(listen, conf, bool(config["muster.console.read.only"]))
            )
        except OSError as exc:
            await broker.stop()
            raise StartupError(f"cannot serve the console on {listen}: {exc.strerror}") from None
        logging.getLogger("muster.console").info(
            "console on http://%s/", listen.rsplit(":", 1)[0] + f":{running[0].port}"
        )

    async def main() -> None:
        try:
            await serve_until_signalled(config, ready)
        finally:
            for console in running:
                await console.stop()

    with asyncio.Runner(loop_factory=loop_factory(config)) as runner:
        runner.run(main())
