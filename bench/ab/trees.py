"""The A/B's trees: :mod:`bench.live.trees`' worktrees, plus what bench imports from
``tests``.

:func:`bench.live.trees.worktree` checks a commit out in a temporary ``git worktree``
and copies this tree's ``bench/`` over its own. Bench also imports a few modules of
``tests`` (the one-delta-at-a-time oracle the pipeline's states are checked against),
which an older tree has in another form or not at all: :func:`worktree` copies those
too (found by reading bench's imports, and the imports of what they import), so both
sides are driven, and checked, by the same code. :func:`digest` hashes that code.
"""

from __future__ import annotations

import ast
import hashlib
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.live import trees

ROOT = trees.ROOT


def _tests_imports(path: Path) -> set[str]:
    """The ``tests.*`` modules a file imports (absolute imports only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module
                 and node.level == 0 else [])
        found.update(n for n in names if n == "tests" or n.startswith("tests."))
    return found


def _module_path(module: str, root: Path) -> Path | None:
    """``tests.oracle`` -> ``tests/oracle.py`` (or the package's directory)."""
    base = root.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return base if (base / "__init__.py").is_file() else None


def tests_modules(root: Path = ROOT) -> list[Path]:
    """What ``root``'s bench imports from ``tests``, transitively, relative to ``root``
    (``tests/__init__.py`` first when there is any)."""
    todo = [p for p in (root / "bench").rglob("*.py") if "__pycache__" not in p.parts]
    seen: set[Path] = set()
    while todo:
        for module in _tests_imports(todo.pop()):
            path = _module_path(module, root)
            if path is not None and path not in seen:
                seen.add(path)
                todo += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    if seen:
        seen.add(root / "tests" / "__init__.py")
    return sorted((p.relative_to(root) for p in seen), key=lambda p: (p.name != "__init__.py",
                                                                     str(p)))


def digest(tree: Path) -> str:
    """A hash of the benchmark code a tree runs: ``bench/**/*.py`` and, in it, the
    modules this tree's bench imports from ``tests``."""
    paths = [p.relative_to(tree) for p in (tree / "bench").rglob("*.py")
             if "__pycache__" not in p.parts]
    for rel in tests_modules():
        found = tree / rel
        paths += ([p.relative_to(tree) for p in found.rglob("*.py")] if found.is_dir()
                  else [rel] if found.is_file() else [])
    hashed = hashlib.sha256()
    for rel in sorted(set(paths)):
        hashed.update(rel.as_posix().encode() + b"\0" + (tree / rel).read_bytes() + b"\0")
    return hashed.hexdigest()[:16]


@contextmanager
def worktree(commit: str, parent: Path) -> Iterator[Path]:
    """``commit`` checked out under ``parent`` with this tree's bench/ and the modules
    of tests/ it imports over its own; removed afterwards."""
    with trees.worktree(commit, parent) as path:
        for rel in tests_modules():
            source, target = ROOT / rel, path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(source, target,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, target)
        yield path
