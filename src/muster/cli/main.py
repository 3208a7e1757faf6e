"""The `muster` command: wires the command modules into one typer app."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import Annotated

import typer
from typer.core import TyperOption

from muster.cli import (
    analyze,
    console,
    consume,
    demo,
    groups,
    produce,
    security,
    serve,
    topics,
    transactions,
)

# typer before 0.2x has no display_type_rich (nor the placeholder to drop)
_display_type = getattr(TyperOption, "display_type_rich", None)


def _flag_without_placeholder(self: TyperOption, ctx: typer.Context) -> str | None:
    # typer 0.29 labels every flag `<bool>` in --help, as if it took a value;
    # a flag takes none, so it gets no placeholder.
    if getattr(self, "is_flag", False) and self.metavar is None:
        return None
    return _display_type(self, ctx) if _display_type else None


if _display_type is not None:
    TyperOption.display_type_rich = _flag_without_placeholder  # type: ignore[method-assign]

app = typer.Typer(
    name="muster",
    help="muster: a Kafka-wire-compatible broker, and tools to talk to one.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"muster {_dist_version('muster')}")
        except PackageNotFoundError:
            typer.echo("muster (version unknown)")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """muster: a Kafka-wire-compatible broker, and tools to talk to one."""


serve.register(app)
app.add_typer(topics.app, name="topics")
app.add_typer(groups.app, name="groups")
app.add_typer(security.acls_app, name="acls")
app.add_typer(security.users_app, name="users")
app.add_typer(transactions.app, name="transactions")
produce.register(app)
consume.register(app)
demo.register(app)
analyze.register(app)
console.register(app)


if __name__ == "__main__":
    app()
