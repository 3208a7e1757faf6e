"""`muster serve`'s body, and its fast path: no typer, rich or client imports.

A broker's start is measured to the first accepted connection, and the full
`muster` CLI (typer, rich, muster's client for the client commands, the
analytics) costs more to import than the broker takes to open an empty data
directory. `fast_serve` parses the options `muster serve` takes in their
plain forms; anything else (--help, a bad value, an option it does not know)
goes to the typer command, which says what is wrong as before.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

DEFAULT_DATA_DIR = "./muster-data"
DEFAULT_LISTEN = "127.0.0.1:9092"


def parse_listen(value: str | None) -> str | None:
    """HOST:PORT normalized; ValueError if it is not one."""
    if value is None:
        return None
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return f"{host}:{int(port)}"


def _fail(message: str, code: int = 1) -> NoReturn:
    from muster.cli._common import fail  # rich and typer only for the error

    fail(message, code=code)


def run_serve(
    data_dir: Path | None, listen: str | None, config_file: Path | None, overrides: list[str]
) -> None:
    from muster.config import ConfigError, load_config

    explicit = {}
    if data_dir is not None:
        explicit["log.dirs"] = str(data_dir)
    if listen is not None:
        explicit["listeners"] = f"PLAINTEXT://{listen}"
        # A config file's advertised.listeners names its own port; --listen
        # replaces both unless advertised.listeners is set on the command line.
        if not any(o.strip().startswith("advertised.listeners=") for o in overrides):
            explicit["advertised.listeners"] = ""
    try:
        config = load_config(config_file, overrides, **explicit)
    except ConfigError as exc:
        _fail(f"configuration: {exc}", code=2)
    except OSError as exc:
        _fail(f"configuration: cannot read {config_file}: {exc.strerror or exc}", code=2)

    try:
        from muster.server.broker import run
        from muster.server.startup import StartupError
    except ModuleNotFoundError as exc:
        if exc.name not in ("muster.server.broker", "muster.server"):
            raise
        _fail("the broker (muster.server.broker) is not available in this installation")

    from muster.log.port import UnreadableLogError
    from muster.repeat_filter import setup_logging

    setup_logging(config["muster.log.level"])
    try:
        if config["muster.console.listen"]:
            from muster.cli.console import run_broker_with_console

            run_broker_with_console(config)
        else:
            run(config)
    except ConfigError as exc:  # settings the broker refuses once it looks closer
        _fail(f"configuration: {exc}", code=2)
    except (StartupError, UnreadableLogError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        pass


_OPTIONS = ("--data-dir", "--listen", "--config", "--set")


def _parse(args: list[str]) -> dict[str, list[str]] | None:
    """{option: values} of plain `--opt VALUE` / `--opt=VALUE` forms, else None."""
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name not in _OPTIONS:
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            i += 1
            value = args[i]
        seen.setdefault(name, []).append(value)
        i += 1
    if any(len(v) > 1 for k, v in seen.items() if k != "--set"):
        return None  # typer's rule for a repeated single option: let it apply it
    return seen


def fast_serve(args: list[str]) -> bool:
    """Serves if `args` (after `serve`) are plain; False to let typer handle them."""
    seen = _parse(args)
    if seen is None:
        return False
    data_dir = Path(seen["--data-dir"][0]) if "--data-dir" in seen else None
    config_file = Path(seen["--config"][0]) if "--config" in seen else None
    if data_dir is not None and data_dir.is_file():
        return False  # typer says "is a file"
    if config_file is not None and not (config_file.is_file() and os.access(config_file, os.R_OK)):
        return False  # typer says what is wrong with it
    try:
        listen = parse_listen(seen["--listen"][0]) if "--listen" in seen else None
    except ValueError:
        return False
    _block_hypothesis_hooks()
    try:
        run_serve(data_dir, listen, config_file, seen.get("--set", []))
    except SystemExit:
        raise
    except BaseException as exc:
        # typer.Exit from `fail`: its exit code, as the typer command gives
        if type(exc).__name__ == "Exit" and hasattr(exc, "exit_code"):
            raise SystemExit(exc.exit_code) from None
        raise
    return True


def _block_hypothesis_hooks() -> None:
    """kio registers hypothesis strategies for its types whenever hypothesis is
    installed (a test extra): ~150 ms of a broker's start for nothing a broker
    uses. kio is imported here with hypothesis hidden, then hypothesis is
    importable again (a broker process never imports it)."""
    if "hypothesis" in sys.modules or "kio.static._phantom" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]
    try:
        import kio.static._phantom  # noqa: F401
    finally:
        del sys.modules["hypothesis"]
