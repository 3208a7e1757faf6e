from muster.cli.main import app

app()
