"""`python -m muster.cli` runs the `muster` command."""

from muster.cli.main import app

app(prog_name="muster")
