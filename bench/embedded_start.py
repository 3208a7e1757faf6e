"""Start to first answer: muster embedded in a test suite vs the peer Tansu, one run.

What a test suite waits for before its first Kafka request, each timed from the
call that starts the broker to the first ApiVersions answer on a fresh TCP
connection (a raw 14-byte request, so no client library start-up is timed):

* `muster thread, cold`: a fresh interpreter that has done `import muster`
  calls `muster.Broker().start()` (thread, memory storage): includes importing
  the broker's modules, as the first fixture of a session pays it;
* `  without test extra`: the same cold start with `hypothesis` made
  unimportable: kio imports it when present (~0.1 s), and only the test extra
  installs it, so this is what `pip install muster` users see;
* `  in --wheel-python`: the same cold start in another interpreter, e.g. a venv
  where only the built wheel is installed (as `.ci/wheel-check` makes one);
* `muster thread, warm`: a second `muster.Broker()` in that interpreter, as
  every further `muster_broker_factory` broker pays it;
* `muster process`: `muster.Broker(mode="process").start()` (`python -m muster
  serve --set muster.storage=memory`), interpreter start included;
* `tansu process`: the Tansu binary with memory storage started as a subprocess.

Prints the median of `--runs` runs (alternating the order) and each muster
figure's ratio to Tansu's (below 1.00: muster answers sooner).

    .venv/bin/python bench/embedded_start.py --runs 7
    .venv/bin/python bench/embedded_start.py --runs 7 --wheel-python /tmp/wheel-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, -1)


def first_answer(port: int, deadline: float) -> None:
    """Connects until the broker accepts, then waits for an ApiVersions answer."""
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), 1)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing answered on {port}") from None
            time.sleep(0.002)
    with sock:
        sock.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
        size = struct.unpack(">i", sock.recv(4))[0]
        got = 0
        while got < size:
            got += len(sock.recv(size - got))


# Runs in a fresh interpreter: `import muster` is done before the clock starts.
CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "user":
    sys.modules["hypothesis"] = None  # as installed without the test extra
from embedded_start import first_answer
import muster
figures = []
for _ in range(2):
    t0 = time.perf_counter()
    broker = muster.Broker().start()
    first_answer(broker.port, time.monotonic() + 30)
    figures.append(time.perf_counter() - t0)
    broker.close()
print(json.dumps(figures))
"""


def muster_thread(install: str = "test", python: str = sys.executable) -> tuple[float, float]:
    here = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [python, "-c", CHILD, here, install], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    cold, warm = json.loads(done.stdout.strip().splitlines()[-1])
    return cold, warm


def muster_process() -> float:
    import muster

    broker = muster.Broker(mode="process")
    t0 = time.perf_counter()
    broker.start()
    first_answer(broker.port, time.monotonic() + 30)
    elapsed = time.perf_counter() - t0
    broker.close()
    return elapsed


def tansu_process() -> float:
    port = common.free_port()
    argv = common.tansu_argv("127.0.0.1", port)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        first_answer(port, time.monotonic() + 30)
        return time.perf_counter() - t0
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write raw figures (seconds) here")
    parser.add_argument(
        "--wheel-python",
        metavar="PYTHON",
        help="also time the cold start in another install, e.g. a venv with only the wheel",
    )
    args = parser.parse_args()

    figures: dict[str, list[float]] = {
        "muster thread, cold": [],
        "  without test extra": [],
        **({"  in --wheel-python": []} if args.wheel_python else {}),
        "muster thread, warm": [],
        "muster process": [],
        "tansu process": [],
    }
    for run in range(args.runs):
        order = ["muster", "tansu"] if run % 2 == 0 else ["tansu", "muster"]
        for name in order:
            if name == "muster":
                cold, warm = muster_thread()
                figures["muster thread, cold"].append(cold)
                figures["muster thread, warm"].append(warm)
                figures["  without test extra"].append(muster_thread("user")[0])
                if args.wheel_python:
                    wheel = muster_thread("test", args.wheel_python)[0]
                    figures["  in --wheel-python"].append(wheel)
                figures["muster process"].append(muster_process())
            else:
                figures["tansu process"].append(tansu_process())
        print(
            f"run {run + 1}: "
            + ", ".join(f"{k} {v[-1] * 1000:.0f} ms" for k, v in figures.items()),
            flush=True,
        )

    peer = common.median(figures["tansu process"])
    print(f"\nstart to first ApiVersions answer, median of {args.runs} runs:")
    print(f"{'':24}{'ms':>8}  {'vs tansu':>9}")
    for name, values in figures.items():
        med = common.median(values)
        assert med is not None
        ratio = "" if name == "tansu process" else f"{med / peer:8.2f}x"  # type: ignore[operator]
        print(f"{name:24}{med * 1000:8.0f}  {ratio:>9}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
