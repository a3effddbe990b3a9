"""Building and installing the distribution the way a user does, away from the checkout.

The build runs on a copy of what it reads (pyproject.toml, README.md, threadfold/ with
its links and the folders they point to): pip writes build/ and *.egg-info/ next to the
sources, which in the shared checkout would race other builds and overwrite the dev
venv's egg-info. Installs go into fresh venvs made without pip (0.2 s instead of 3 s):
the dev venv's pip installs into them (``pip --python``), its cache serving the wheels.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from tests.sources import LINKED
from tests.workers.harness import ROOT

PACKAGE = "threadfold"

#: What the build reads besides the package (pyproject's ``readme``).
BUILD_FILES = ("pyproject.toml", "README.md")

#: Generous bounds for a build or an install on a loaded machine (not timings).
BUILD_TIMEOUT = 300.0

T = TypeVar("T")


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """Every import package of the source tree by dotted name (``threadfold.workers.storage``),
    found as the build finds them: through threadfold/'s links, folders with __init__.py."""
    found: dict[str, Path] = {}

    def walk(name: str, path: Path) -> None:
        found[name] = path
        for child in sorted(path.iterdir()):
            if child.is_dir() and (child / "__init__.py").is_file():
                walk(f"{name}.{child.name}", child)

    walk(PACKAGE, root / PACKAGE)
    return found


def source_files(root: Path = ROOT) -> set[str]:
    """The files an install must carry, as wheel paths (``threadfold/workers/storage/x.lua``):
    every file in a package folder but compiled bytecode and dotfiles. A folder that is no
    package (``__pycache__``, loadtests' reports) is not part of the distribution."""
    files: set[str] = set()
    for name, path in package_dirs(root).items():
        prefix = name.replace(".", "/")
        for child in path.iterdir():
            if child.is_file() and not child.name.startswith(".") and child.suffix != ".pyc":
                files.add(f"{prefix}/{child.name}")
    return files


def link_targets(root: Path = ROOT) -> list[str]:
    """The top-level folders threadfold/ links to (tests.sources.LINKED, which
    tests/test_layout.py checks are links), as paths from ``root``."""
    return [os.path.relpath((root / PACKAGE / name).resolve(), root) for name in LINKED]


def copy_source(dest: Path, root: Path = ROOT) -> Path:
    """A copy of what the build reads, the links kept as links (as Docker's COPY keeps them)."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
    dest.mkdir(parents=True)
    for name in BUILD_FILES:
        shutil.copy2(root / name, dest / name)
    for folder in [PACKAGE, *link_targets(root)]:
        shutil.copytree(root / folder, dest / folder, symlinks=True, ignore=skip)
    return dest


def build_wheel(source: Path, out: Path) -> Path:
    """``pip wheel --no-deps`` of ``source``: the one wheel it writes to ``out``."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w", str(out)])
    (wheel,) = out.glob(f"{PACKAGE}-*.whl")
    return wheel


def fresh_venv(path: Path) -> Path:
    """A new venv without pip; returns its python."""
    run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    return path / "bin" / "python"


def pip_install(python: Path, *requirements: str) -> None:
    """The dev venv's pip installs into ``python``'s venv (no bytecode: faster, and none
    is needed for one run)."""
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-compile",
            *requirements,
        ]
    )


#: Never passed on: what points Python at the checkout or the dev venv, and
#: PYTHONDONTWRITEBYTECODE (installs skip compiling, so the first process that imports a
#: module compiles it for the ones after it: Celery alone is seconds to compile).
_NOT_PASSED = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"}


def clean_env(extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The environment without what would point Python at the checkout or the dev venv,
    nor a deployment's settings (THREADFOLD_*), with ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _NOT_PASSED and not key.startswith("THREADFOLD_")
    }
    return {**env, **extra}


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """``argv`` to its end; with ``check``, a failure raises with its output."""
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
    return done


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def once_per_run(
    shared: Path, name: str, make: Callable[[Path], T], load: Callable[[Path], T]
) -> T:
    """``make(folder)`` once per test run, however many xdist workers ask; the others
    wait for it and ``load(folder)``. ``shared`` is a folder all of the run's workers see.
    A ``make`` that failed leaves no mark: the next worker starts again from nothing."""
    folder = shared / name
    done = shared / f"{name}.done"
    with _locked(shared / f"{name}.lock"):
        if done.exists():
            return load(folder)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        made = make(folder)
        done.touch()
        return made
