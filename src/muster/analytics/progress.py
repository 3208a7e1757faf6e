"""What the analysis is doing while it runs: a rich bar over the job's stages
and, under it, the Spark tasks of the stage running now (polled from Spark's
status tracker, since a stage can spend minutes in one Spark job)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

POLL_SECONDS = 0.25


class StageProgress:
    """`with p.running(): with p.stage(i): ...`; silent when console is None."""

    def __init__(self, stages: Sequence[str], console: Console | None, spark: Any = None) -> None:
        self.stages = stages
        self.spark = spark
        self.progress = (
            Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
            )
            if console is not None
            else None
        )
        self._stage_task: Any = None
        self._spark_task: Any = None
        self._stop = threading.Event()

    @contextmanager
    def running(self) -> Iterator[StageProgress]:
        if self.progress is None:
            yield self
            return
        with self.progress:
            self._stage_task = self.progress.add_task(
                f"[bold]{self.stages[0]}", total=len(self.stages)
            )
            poller = None
            if self.spark is not None:
                self._spark_task = self.progress.add_task("  Spark tasks", total=None)
                poller = threading.Thread(target=self._poll, name="spark-progress", daemon=True)
                poller.start()
            try:
                yield self
            finally:
                self._stop.set()
                if poller is not None:
                    poller.join(5)
                    self.progress.remove_task(self._spark_task)

    @contextmanager
    def stage(self, index: int) -> Iterator[None]:
        if self.progress is not None:
            self.progress.update(
                self._stage_task, description=f"[bold]{self.stages[index]}", completed=index
            )
        yield
        if self.progress is not None:
            self.progress.update(self._stage_task, completed=index + 1)

    def _poll(self) -> None:
        assert self.progress is not None
        tracker = self.spark.sparkContext.statusTracker()
        while not self._stop.wait(POLL_SECONDS):
            try:
                infos = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            except Exception:  # the session is stopping: nothing more to show
                return
            infos = [i for i in infos if i is not None]
            if not infos:
                continue
            total = sum(i.numTasks for i in infos)
            done = sum(i.numCompletedTasks for i in infos)
            self.progress.update(self._spark_task, total=total, completed=done)
