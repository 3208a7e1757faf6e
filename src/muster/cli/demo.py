"""`muster demo`: the broker on its embedded defaults, shown working with real clients."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from muster.cli.analyze import Source


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        data_dir: Annotated[Path, typer.Option("--data-dir", help="Broker data directory.")] = Path(
            "muster-data"
        ),
        listen: Annotated[str, typer.Option("--listen", help="HOST:PORT to serve on.")] = (
            "127.0.0.1:9092"
        ),
        keep_serving: Annotated[
            bool,
            typer.Option("--keep-serving/--exit", help="Keep the broker up after the demo."),
        ] = os.environ.get("CI") is None,
        out_dir: Annotated[
            Path,
            typer.Option("--out", help="Where the Spark tables and the analytics report go."),
        ] = Path("muster-demo"),
        keep_data: Annotated[
            bool,
            typer.Option(
                "--keep-data",
                help="Keep an earlier demo run's data (by default each run starts empty).",
            ),
        ] = False,
        source: Annotated[
            Source,
            typer.Option(
                "--source",
                help="The Spark source: muster's own (no JVM jars) or kafka, Spark's "
                "Kafka connector (its jars named by MUSTER_SPARK_JARS).",
            ),
        ] = Source.muster,
    ) -> None:
        """Start the broker, produce, churn a consumer group, run the Spark pipeline and report."""
        from muster.cli._common import fail, require_spark

        require_spark("demo")
        if source is Source.kafka:
            from muster.spark.connector import configured_jars

            if not configured_jars():
                fail(
                    "--source kafka: Spark's Kafka connector needs its jars: set "
                    "MUSTER_SPARK_JARS (e.g. to .cache/spark-kafka/lib from "
                    "`make spark-kafka-jars`)"
                )
        from muster import demo as demo_module
        from muster.config import load_config
        from muster.server.startup import StartupError
        from muster.spark.connector import ConnectorMissing

        config = load_config(
            None,
            [],
            **{"log.dirs": str(data_dir), "listeners": f"PLAINTEXT://{listen}"},
        )
        try:
            demo_module.run(config, keep_serving, out_dir, keep_data, source.value)
        except StartupError as exc:
            fail(str(exc))
        except ConnectorMissing as exc:
            fail(f"--source kafka: {exc}")
