"""The repository's Python sources, each read once: the one place that knows that
``threadfold/`` holds the client modules and links to the other top-level folders
(``threadfold/core -> ../core``, ...), so a scan of the tree neither misses a module nor
reads one twice (through its folder and through its link)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
#: The installed package, and the top-level folders it links to.
PACKAGE: Final = "threadfold"
LINKED: Final = ("core", "workers", "api", "loadtests")


def python_files(top: str) -> Iterator[Path]:
    """The ``.py`` files of the top-level folder ``top``: for ``threadfold`` its own
    modules and subpackages (``threadfold/testing``) only (its links are read at their
    targets)."""
    if top == PACKAGE:
        package = ROOT / PACKAGE
        own = [p for p in package.iterdir() if p.is_dir() and not p.is_symlink()]
        yield from sorted([
            *package.glob("*.py"),
            *(p for d in own for p in d.rglob("*.py") if "__pycache__" not in p.parts),
        ])
    else:
        yield from sorted((ROOT / top).rglob("*.py"))
