"""The `muster` command's entry point: `muster serve` without the whole CLI."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        from muster.cli.serve_run import fast_serve

        if fast_serve(sys.argv[2:]):
            return
    from muster.cli.main import app

    app()
