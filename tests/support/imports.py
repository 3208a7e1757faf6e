"""The module-level import graph of `src/muster`, read from the source (no
imports executed): which module imports which, for the layer and cycle checks
in tests/core/test_purity.py."""

from __future__ import annotations

import ast
from pathlib import Path

import muster

ROOT = Path(muster.__file__).parent


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module and package of muster."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports executed when the module is imported: at module level, also
    inside top-level try/if blocks, but not under `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" in ast.unparse(node.test):
                    visit(node.orelse)
                else:
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return found


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import in the module, also inside functions (lazy imports still
    point somewhere), except under `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _with_parents(name: str, known: dict[str, Path]) -> set[str]:
    """Importing a.b.c runs a, a.b and a.b.c."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(known)


def graph(lazy: bool = False) -> dict[str, set[str]]:
    """module -> the muster modules its import runs (itself excluded); with
    `lazy`, also those its functions import when they run."""
    known = modules()
    find = _all_imports if lazy else _top_level_imports
    out: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in find(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    deps |= _with_parents(alias.name, known)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            deps |= _with_parents(base, known)
            for alias in node.names:
                deps |= _with_parents(f"{base}.{alias.name}", known)
        deps.discard(name)
        out[name] = deps
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def strongconnect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            strongconnect(v)
    return found


def layer(module: str) -> str:
    """The top-level package (or module) of muster a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_imports(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """layer -> the other layers its modules import."""
    out: dict[str, set[str]] = {}
    for module, deps in g.items():
        for dep in deps:
            a, b = layer(module), layer(dep)
            if a and b and a != b:
                out.setdefault(a, set()).add(b)
    return out


def imported_modules(path: Path) -> list[str]:
    """Every module name `path` imports, at any depth (function-level imports too)."""
    return [
        name
        for node in _all_imports(ast.parse(path.read_text(), str(path)))
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        if name
    ]
