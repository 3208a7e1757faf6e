"""Differences conformance/DIFFERENCES.md explains: (scenario pattern, field
pattern, reason), fnmatch patterns over the scenario's name and the differing
path `<step>:<label>.<field>...` the runner prints. Keep both files in step."""

from __future__ import annotations

import fnmatch

DOCUMENTED: list[tuple[str, str, str]] = []


def explain(scenario: str, path: str) -> str | None:
    for sc, pt, reason in DOCUMENTED:
        if fnmatch.fnmatch(scenario, sc) and fnmatch.fnmatch(path, pt):
            return reason
    return None
