"""Dependency direction: api -> workers -> core; core imports neither; nothing imports api."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["core", "workers", "api", "threadfold", "loadtests", "bench"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _package_imports(package: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        found |= _imports(path)
    return found


def test_core_imports_neither_workers_nor_api() -> None:
    assert not _package_imports("core") & {"workers", "api", "loadtests"}


@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "api"])
def test_nothing_outside_api_imports_api(package: str) -> None:
    if not (ROOT / package).exists():
        pytest.fail(f"missing top-level package {package}")
    assert "api" not in _package_imports(package)


def test_workers_do_not_import_the_http_layer() -> None:
    assert "api" not in _package_imports("workers")


def test_core_does_no_io() -> None:
    """Pure logic: no sockets, no Redis, no Celery, no environment in core."""
    forbidden = {"redis", "celery", "kombu", "socket", "requests", "httpx", "os", "time"}
    assert not _package_imports("core") & forbidden


def test_the_reference_implementation_is_a_test_only_dependency() -> None:
    for package in ["core", "workers", "api", "threadfold"]:
        assert not _package_imports(package) & {"langgraph", "langchain_core"}, package
