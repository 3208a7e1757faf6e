"""The README's shell blocks for a second broker and for a secured broker run
as written, from a directory laid out like the repository's root (`.venv/bin`
holding this interpreter and its `muster`), each with free ports in place of
the README's 191xx ones, as a reader beside a running demo would choose."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.brokers import free_port

REPO = Path(__file__).resolve().parents[2]
SECTIONS = ("## Using it", "## A secured broker")


def blocks(section: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    start = text.index(section)
    end = text.find("\n## ", start + 1)
    return re.findall(r"```sh\n(.*?)```", text[start : end if end > 0 else None], re.S)


def root_like(tmp_path: Path) -> Path:
    if sys.prefix != sys.base_prefix:
        # in a venv: the venv itself, so `.venv/bin/python` finds its pyvenv.cfg
        # and site-packages (a symlinked interpreter alone resolves to the base
        # Python, which has no muster)
        (tmp_path / ".venv").symlink_to(sys.prefix, target_is_directory=True)
        return tmp_path
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    here = Path(sys.executable).parent
    (bin_dir / "python").symlink_to(sys.executable)
    muster = bin_dir / "muster"
    if (here / "muster").exists():
        muster.symlink_to(here / "muster")
    else:  # no console script beside this interpreter: the module entry point
        muster.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m muster "$@"\n')
        muster.chmod(0o755)
    return tmp_path


@pytest.mark.parametrize("section", SECTIONS)
def test_readme_shell_blocks_run_as_written(tmp_path: Path, section: str) -> None:
    found = blocks(section)
    assert found, f"no sh block under {section}"
    script = "\n".join(found)
    for port in sorted(set(re.findall(r"\b19\d\d\d\b", script))):
        script = script.replace(port, str(free_port()))
    if shutil.which("kcat") is None:  # .ci/install brings it; a bare machine may lack it
        script = re.sub(r"^kcat .*?(?<!\\)\n", "", script, flags=re.M | re.S)
    cwd = root_like(tmp_path)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    # what the blocks leave in a clone (data, certificates, properties files)
    # is git-ignored there, so a reader's `git status` stays clean
    left = [p.name + ("/x" if p.is_dir() else "") for p in cwd.iterdir() if p.name != ".venv"]
    assert left, "the blocks made nothing"
    for path in left:
        ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "--no-index", path])
        assert ignored.returncode == 0, f"{path} (made by the README's blocks) is not git-ignored"
