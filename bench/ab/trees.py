"""The A/B's trees: :mod:`bench.live.trees`' worktrees, plus the oracle bench checks with.

:func:`bench.live.trees.worktree` checks a commit out in a temporary ``git worktree``
and copies this tree's ``bench/`` over its own. Bench checks the states it timed with
the oracle, :mod:`threadfold.testing` (the one-delta-at-a-time fold), which an older
tree has in another form or not at all: :func:`worktree` copies that package too (it
imports nothing of the product but the reducers, which every tree has), so both sides
are driven, and checked, by the same code. :func:`digest` hashes that code.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.live import trees

ROOT = trees.ROOT
#: What bench imports besides bench and the product under test: the oracle.
ORACLE = Path("threadfold", "testing")


def oracle_modules(root: Path = ROOT) -> list[Path]:
    """The oracle's modules in ``root``, relative to it."""
    return sorted(p.relative_to(root) for p in (root / ORACLE).rglob("*.py")
                  if "__pycache__" not in p.parts)


def digest(tree: Path) -> str:
    """A hash of the benchmark code a tree runs: ``bench/**/*.py`` and the oracle."""
    paths = [p.relative_to(tree) for p in (tree / "bench").rglob("*.py")
             if "__pycache__" not in p.parts]
    paths += oracle_modules(tree)
    hashed = hashlib.sha256()
    for rel in sorted(set(paths)):
        hashed.update(rel.as_posix().encode() + b"\0" + (tree / rel).read_bytes() + b"\0")
    return hashed.hexdigest()[:16]


@contextmanager
def worktree(commit: str, parent: Path) -> Iterator[Path]:
    """``commit`` checked out under ``parent`` with this tree's bench/ and oracle over
    its own; removed afterwards."""
    with trees.worktree(commit, parent) as path:
        target = path / ORACLE
        if target.is_file() or target.is_symlink():
            target.unlink()
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(ROOT / ORACLE, target, ignore=shutil.ignore_patterns("__pycache__"))
        yield path
