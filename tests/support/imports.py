"""What a module imports, read from its source (for the tests that hold a
package to the imports its README allows)."""

from __future__ import annotations

import ast
from pathlib import Path


def imported_modules(path: Path) -> list[str]:
    """Every module name `path` imports, at any depth (function-level imports too)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names
