"""Java programs beside Kafka's jars: the sources in tests/java/ compiled with
`javac` into the project's git-ignored cache (once per content, under a lock,
shared by every worktree), and ToolSession, one JVM that runs many of Kafka's
command-line tools (a JVM start costs a second or more on a shared machine).

    python -m tests.support.java      # compiles if needed, prints the classes' folder
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.kafka import LOG4J, classpath, java_command
from tests.support.peers import REPO_ROOT, build_lock, cache_dir

JAVA_SOURCES = REPO_ROOT / "tests" / "java"

TOPICS = "org.apache.kafka.tools.TopicCommand"
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
ACLS = "org.apache.kafka.tools.AclCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"


def compiled(folder: Path = JAVA_SOURCES) -> Path:
    """The folder of `folder`/*.java's classes (tests/java by default; bench/java
    too), compiled against Kafka's jars on first use (a folder per hash of the
    sources, so worktrees with different sources never clash)."""
    sources = sorted(folder.glob("*.java"))
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    out = cache_dir() / "java" / digest.hexdigest()[:16]
    done = out / ".done"
    if done.exists():
        return out
    with build_lock("java"):
        if not done.exists():
            out.mkdir(parents=True, exist_ok=True)
            cmd = ["javac", "-nowarn", "-d", str(out), "-cp", classpath(), *map(str, sources)]
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(f"javac failed:\n{result.stdout}{result.stderr}")
            done.touch()
    return out


def program_command(main_class: str, *args: str, heap: str = "256m") -> list[str]:
    """`java` running one of tests/java's programs (or Kafka's own main classes)
    with the compiled classes before Kafka's jars, quiet log4j."""
    cmd = java_command(main_class, *args, heap=heap)
    index = cmd.index("-cp")
    cmd[index + 1] = f"{compiled()}:{cmd[index + 1]}"
    cmd.insert(1, f"-Dlog4j2.configurationFile={LOG4J}")
    cmd.insert(1, "-Dkafka.log.file=/dev/null")
    return cmd


def run_program(main_class: str, *args: str, timeout: float = 180.0) -> list[dict[str, Any]]:
    """One of tests/java's programs to its end: the JSON lines it printed
    (anything else on stdout is ignored; stderr goes into the error raised when it
    fails)."""
    done = subprocess.run(
        program_command(main_class, *args),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0:
        raise AssertionError(
            f"{main_class} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return lines


class ToolSession:
    """One JVM (tests/java/ToolRunner.java) running Kafka's tools one after the
    other: run(TOPICS, "--list") -> {"code", "out", "err"}. `--bootstrap-server`
    is added to every command."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.proc = subprocess.Popen(
            program_command("ToolRunner"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, main_class: str, *args: str, stdin: str = "") -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        command = {"main": main_class, "args": ["--bootstrap-server", self.bootstrap, *args]}
        if stdin:
            command["stdin"] = stdin
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"ToolRunner exited ({self.proc.wait()}) on {command}")
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


if __name__ == "__main__":
    print(compiled())
    sys.exit(0)
