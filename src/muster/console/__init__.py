"""muster's web console: `muster console -b HOST:PORT` or inside the broker
(`muster.console.listen`). `muster.console.app.create_app` builds the ASGI app."""
