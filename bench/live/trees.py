"""A base commit's tree for an A/B (:mod:`bench.ab`): the commit checked out in a
temporary ``git worktree`` with this tree's ``bench/`` copied in, run by the same venv.

Why a whole tree and not just ``PYTHONPATH``: the venv's threadfold is an editable
install of the checkout (a meta-path finder appended after ``sys.path``'s), so a
``sys.path`` entry wins over it, but ``python -m`` puts the working directory first, and
the pipeline starts its Celery workers from the checkout bench is imported from
(``bench.common.services.ROOT``). With bench copied into the worktree and every process
started there (working directory and ``PYTHONPATH``), the driver and the workers all
import the worktree's threadfold (:mod:`bench.ab.proof` checks which code each ran).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: This checkout (bench/live/trees.py -> the repository).
ROOT = Path(__file__).resolve().parents[2]


def git(*args: str, cwd: Path = ROOT) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def resolve(rev: str) -> str:
    """The full commit id of ``rev``."""
    return git("rev-parse", "--verify", f"{rev}^{{commit}}")


@contextmanager
def worktree(rev: str, parent: Path) -> Iterator[Path]:
    """``rev`` checked out (detached) under ``parent`` with this tree's bench/ over its
    own; the worktree is removed (and pruned from the repository's list) afterwards."""
    path = parent / rev[:12]
    git("worktree", "add", "--detach", str(path), rev)
    try:
        shutil.rmtree(path / "bench")
        shutil.copytree(ROOT / "bench", path / "bench",
                        ignore=shutil.ignore_patterns("__pycache__", "results"))
        yield path
    finally:
        git("worktree", "remove", "--force", str(path))
        git("worktree", "prune")


@contextmanager
def temporary() -> Iterator[Path]:
    """A directory outside the repository for the worktrees."""
    with tempfile.TemporaryDirectory(prefix="threadfold-ab-") as path:
        yield Path(path)


def env_for(tree: Path) -> dict[str, str]:
    """The environment a process of ``tree`` runs with (its children inherit it)."""
    return {**os.environ, "PYTHONPATH": str(tree)}
