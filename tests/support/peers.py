"""Peers built where they run: franz-go's kfake (and franz-go's own kgo
integration tests, `go test -c`) from the Go module proxy, into
the project's git-ignored `.cache/peers/` (shared by every worktree of the
clone). `../shared/peers/` carries only the recipe (`kfake-server/build.sh`),
never a binary. Used by tests/support, bench/ and `.ci/install`:

    python -m tests.support.peers kfake     # builds if missing, prints the path
    python -m tests.support.peers kgo       # franz-go's kgo integration-test binary
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def main_checkout(root: Path = REPO_ROOT) -> Path:
    """The main clone of `root`: a git worktree's `.git` is a file naming
    `<clone>/.git/worktrees/<name>`; ../shared/ and the cache sit beside and in
    the clone, not the worktree."""
    dot_git = root / ".git"
    if dot_git.is_file():
        line = dot_git.read_text().strip()
        if line.startswith("gitdir:"):
            gitdir = Path(line.removeprefix("gitdir:").strip())
            if gitdir.parent.name == "worktrees":
                return gitdir.parent.parent.parent
    return root


def shared_peers() -> Path:
    """../shared/peers beside the clone (MUSTER_PEERS overrides it)."""
    return Path(os.environ.get("MUSTER_PEERS") or main_checkout().parent / "shared" / "peers")


def cache_dir() -> Path:
    """The project's git-ignored cache (MUSTER_CACHE overrides it)."""
    return Path(os.environ.get("MUSTER_CACHE") or main_checkout() / ".cache")


@contextlib.contextmanager
def build_lock(name: str) -> Iterator[None]:
    """One build at a time across processes (pytest, bench and a worktree may
    ask at once); the loser finds the binary built when it gets the lock."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def kfake_binary() -> Path:
    """franz-go's kfake: $KFAKE_BIN if set, else `.cache/peers/kfake`, built
    from the Go module proxy by ../shared/peers/kfake-server/build.sh when
    missing (about 2 minutes the first time, then cached)."""
    if os.environ.get("KFAKE_BIN"):
        path = Path(os.environ["KFAKE_BIN"])
        if not path.exists():
            raise FileNotFoundError(f"KFAKE_BIN={path} does not exist")
        return path
    path = cache_dir() / "peers" / "kfake"
    if path.exists():
        return path
    script = shared_peers() / "kfake-server" / "build.sh"
    if not script.exists():
        raise FileNotFoundError(f"kfake's build recipe not found at {script} (set MUSTER_PEERS)")
    with build_lock("kfake"):
        if not path.exists():
            done = subprocess.run(
                ["bash", str(script), str(path)], capture_output=True, text=True, check=False
            )
            if done.returncode != 0 or not path.exists():
                raise RuntimeError(
                    f"building kfake with {script} failed ({done.returncode}):\n"
                    f"{done.stderr[-2000:]}"
                )
    return path


def go_module_dir(module_dir: Path, module: str) -> Path:
    """Where the Go module cache holds `module` for the throwaway module in
    `module_dir` (its source, read-only: tests read files beside them)."""
    done = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", module],
        cwd=module_dir,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip())


def kgo_test_binary() -> tuple[Path, Path]:
    """franz-go's own kgo test binary (`go test -c`, its integration tests
    run against the broker in $KGO_SEEDS), built from the Go module proxy into
    `.cache/peers/kgo.test`; also the package's source folder, the working
    directory its tests expect. About 4 minutes the first time."""
    folder = cache_dir() / "peers" / "kgo-module"
    path = cache_dir() / "peers" / "kgo.test"
    pkg = "github.com/twmb/franz-go/pkg/kgo"
    with build_lock("kgo"):
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "go.mod").write_text("module musterkgotest\n\ngo 1.24\n")
            steps = [
                ["go", "get", "-t", f"{pkg}@latest"],
                ["go", "test", "-c", "-o", str(path), pkg],
            ]
            for step in steps:
                done = subprocess.run(step, cwd=folder, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise RuntimeError(f"{' '.join(step)} failed:\n{done.stderr[-2000:]}")
    source = go_module_dir(folder, "github.com/twmb/franz-go") / "pkg" / "kgo"
    return path, source


def kgo_test_path() -> Path:
    return kgo_test_binary()[0]


BUILDERS = {"kfake": kfake_binary, "kgo": kgo_test_path}


def main(argv: list[str]) -> int:
    names = argv or list(BUILDERS)
    for name in names:
        if name not in BUILDERS:
            print(f"unknown peer {name!r}; known: {', '.join(BUILDERS)}", file=sys.stderr)
            return 2
        print(BUILDERS[name]())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
