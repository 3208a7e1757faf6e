"""Small file helpers the on-disk log shares: fsync of a file or directory,
and JSON side files that a crash may have torn."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


fsync_file = fsync_dir  # the same open-fsync-close


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):  # missing, or torn by a crash
        return None
    return doc if isinstance(doc, dict) else None
