"""Demo group members: threads that leave cleanly, and a process that gets SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from muster.client import Consumer, TopicPartition
from muster.demo.settings import GROUP, TOPIC, member_config


@dataclass
class Member:
    """One group member polling in its own thread, as an application would."""

    name: str
    bootstrap: str
    consumed: int = 0
    assignments: list[list[int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Member:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        consumer = Consumer(member_config(self.bootstrap, GROUP, self.name))

        def on_assign(_c: Any, parts: list[TopicPartition]) -> None:
            self.assignments.append(sorted(p.partition for p in parts))

        consumer.subscribe([TOPIC], on_assign=on_assign)
        try:
            while not self._stop.is_set():
                self.consumed += len(consumer.poll(0.2))
        finally:
            consumer.close()  # commits, then LeaveGroup: a clean departure

    @property
    def current(self) -> list[int]:
        return self.assignments[-1] if self.assignments else []

    def leave(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


class MemberProcess:
    """A member in a child process (muster.demo.member_process), for kill -9."""

    def __init__(self, name: str, bootstrap: str) -> None:
        self.name = name
        self.consumed = 0
        self.assignments: list[list[int]] = []
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "muster.demo.member_process", bootstrap, GROUP, TOPIC, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name=f"{name}-out", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            word, _, rest = line.strip().partition(" ")
            if word == "assigned":
                self.assignments.append(sorted(int(p) for p in rest.split(",") if p))
            elif word == "consumed":
                self.consumed = int(rest)

    @property
    def current(self) -> list[int]:
        return self.assignments[-1] if self.assignments else []

    def kill(self) -> None:
        os.kill(self._proc.pid, signal.SIGKILL)
        self._proc.wait(10)
        self.assignments.append([])
