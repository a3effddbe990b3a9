"""Editable installs (``pip install -e .``, what ``make install`` makes) keep working with
the namespace: ``threadfold`` is the checkout's, its parts are reached through
threadfold/'s links, a module added to core/ is importable at once, and the checkout's
top-level folders are not importable by their bare names."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.packaging.builds import PACKAGE, clean_env, copy_source, fresh_venv, pip_install, run
from tests.sources import LINKED
from tests.workers.harness import ROOT

INTERNALS = LINKED

PROBE = """
import importlib, json
import threadfold, threadfold.core, threadfold.workers, threadfold.api
refused = []
for name in {internals!r}:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        refused.append(name)
print(json.dumps({{"threadfold": threadfold.__file__, "core": threadfold.core.__file__,
                  "refused": refused}}))
"""


def _probe(python: Path, cwd: Path) -> dict[str, object]:
    code = textwrap.dedent(PROBE.format(internals=INTERNALS))
    done = run([str(python), "-c", code], cwd=cwd, env=clean_env())
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_the_dev_venv_imports_threadfold_from_the_checkout(tmp_path: Path) -> None:
    """The dev venv is an editable install: from anywhere, ``threadfold`` is the checkout's
    (a venv installed before the namespace maps core/ and api/ too: ``make install``)."""
    found = _probe(Path(sys.executable), tmp_path)
    assert found["threadfold"] == str(ROOT / PACKAGE / "__init__.py")
    assert found["core"] == str(ROOT / PACKAGE / "core" / "__init__.py")
    assert found["refused"] == list(INTERNALS), "reinstall the dev venv: make install"


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the checkout installed editable into a fresh venv: (the copy, its python).
    A copy, so that a module can be added to its core/ without touching the checkout."""
    folder = tmp_path_factory.mktemp("editable")
    source = copy_source(folder / "src")
    python = fresh_venv(folder / "venv")
    pip_install(python, "-e", str(source))
    return source, python


def test_an_editable_install_reads_the_checkout_and_hides_its_folders(
    editable: tuple[Path, Path], tmp_path: Path
) -> None:
    source, python = editable
    found = _probe(python, tmp_path)
    assert found["threadfold"] == str(source / PACKAGE / "__init__.py")
    assert found["core"] == str(source / PACKAGE / "core" / "__init__.py")
    assert found["refused"] == list(INTERNALS)


def test_a_module_added_to_core_is_importable_without_reinstalling(
    editable: tuple[Path, Path], tmp_path: Path
) -> None:
    source, python = editable
    (source / "core" / "added_after_install.py").write_text("ANSWER = 42\n")
    code = "from threadfold.core.added_after_install import ANSWER; print(ANSWER)"
    done = run([str(python), "-c", code], cwd=tmp_path, env=clean_env())
    assert done.stdout.split() == ["42"]
