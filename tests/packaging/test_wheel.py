"""The distribution as a user gets it: the wheel holds one import package, ``threadfold``
(the repository's core/, workers/, api/ and loadtests/ inside it, never beside it, where
they would collide with a user's own ``core`` or ``api``), and installed into a fresh
venv it imports, runs its command and serves, from a folder outside the checkout.

The wheel and the venv are made once per test run (10-20 s), shared by the xdist workers.
"""

from __future__ import annotations

import ast
import email.parser
import json
import os
import textwrap
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.infra.ports import free_port
from tests.infra.processes import ManagedProcess, wait_until
from tests.infra.redis_server import RedisServer
from tests.packaging.builds import (
    PACKAGE,
    build_wheel,
    clean_env,
    copy_source,
    fresh_venv,
    once_per_run,
    package_dirs,
    pip_install,
    run,
    source_files,
)
from tests.sources import LINKED
from tests.workers.harness import ROOT

INTERNALS = LINKED


@dataclass(frozen=True)
class Installed:
    """A fresh venv with the wheel and its dependencies, and a folder outside the checkout
    to run it from (so that nothing is imported from the current directory)."""

    python: Path
    outside: Path

    @property
    def bin(self) -> Path:
        return self.python.parent

    def run(self, *argv: str, env: dict[str, str] | None = None) -> str:
        done = run(argv, cwd=self.outside, env=clean_env(env or {}))
        return done.stdout + done.stderr

    def python_code(self, code: str) -> str:
        return self.run(str(self.python), "-c", textwrap.dedent(code))


def _shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this run sees (the run's own base folder)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _the_wheel(folder: Path) -> Path:
    (wheel,) = (folder / "dist").glob(f"{PACKAGE}-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return once_per_run(
        _shared(tmp_path_factory),
        "wheel",
        lambda folder: build_wheel(copy_source(folder / "src"), folder / "dist"),
        _the_wheel,
    )


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    def make(folder: Path) -> Installed:
        python = fresh_venv(folder / "venv")
        pip_install(python, str(wheel))
        return load(folder)

    def load(folder: Path) -> Installed:
        (folder / "outside").mkdir(exist_ok=True)
        return Installed(folder / "venv" / "bin" / "python", folder / "outside")

    return once_per_run(_shared(tmp_path_factory), "venv", make, load)


@pytest.fixture
def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _requirements(wheel: Path) -> list[Requirement]:
    metadata = email.parser.Parser().parsestr(_metadata(wheel, "METADATA"))
    return [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]


def _is_optional(requirement: Requirement) -> bool:
    return requirement.marker is not None and "extra" in str(requirement.marker)


def _metadata(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (path,) = [n for n in archive.namelist() if n.endswith(f".dist-info/{name}")]
        return archive.read(path).decode()


# -- the wheel ------------------------------------------------------------------------------


def test_the_wheel_holds_one_import_package_threadfold(wheel_names: set[str]) -> None:
    tops = {name.split("/")[0] for name in wheel_names}
    dist_info = {top for top in tops if top.endswith(".dist-info")}
    assert len(dist_info) == 1, tops
    assert tops - dist_info == {PACKAGE}, f"top-level entries beside threadfold/: {tops}"
    for internal in INTERNALS:
        assert f"{PACKAGE}/{internal}/__init__.py" in wheel_names, internal


def test_the_wheel_holds_every_module_and_data_file_of_every_package(
    wheel_names: set[str],
) -> None:
    """Every package folder of the source (threadfold/ through its links) with every file
    in it: modules, the Lua scripts, py.typed. A package left out of pyproject's list, or
    a data file its package-data does not name, is missing here (and in every install)."""
    expected = source_files()
    assert f"{PACKAGE}/py.typed" in expected  # PEP 561: the package is typed
    missing = sorted(expected - wheel_names)
    assert not missing, (
        f"{len(missing)} files of the source are not in the wheel (pyproject.toml's "
        f"[tool.setuptools] packages / package-data): {missing[:20]}"
    )
    packages = {name.replace(".", "/") for name in package_dirs()}
    extra = sorted(
        name
        for name in wheel_names - expected
        if not name.split("/")[0].endswith(".dist-info") and name.rsplit("/", 1)[0] in packages
    )
    assert not extra, f"the wheel holds files the source does not: {extra}"


def test_the_wheel_holds_the_page_at_ui(wheel_names: set[str]) -> None:
    """api/ui/ is a folder of static files, no package: pyproject's package-data must
    name it (``ui/*``), or the installed API serves no page."""
    page = ROOT / "api" / "ui"
    expected = {f"{PACKAGE}/api/ui/{path.name}" for path in page.iterdir() if path.is_file()}
    assert {f"{PACKAGE}/api/ui/index.html", f"{PACKAGE}/api/ui/app.js"} <= expected
    missing = sorted(expected - wheel_names)
    assert not missing, f"files of api/ui/ not in the wheel (package-data): {missing}"


def test_the_wheel_declares_the_command_and_no_integration_in_its_base(wheel: Path) -> None:
    entry_points = _metadata(wheel, "entry_points.txt")
    assert "threadfold = threadfold.workers.ops.cli:main" in entry_points
    assert _metadata(wheel, "METADATA").count(f"\nName: {PACKAGE}\n") == 1
    base = [r.name for r in _requirements(wheel) if not _is_optional(r)]
    assert "msgspec" in base, base
    assert not [name for name in base if name.startswith(("langchain", "langgraph"))], base


# -- the installed package -------------------------------------------------------------------


def test_the_installed_package_imports_and_its_parts_only_under_threadfold(
    installed: Installed,
) -> None:
    answer = installed.python_code(
        f"""
        import json, site, sys
        import threadfold, threadfold.core, threadfold.workers, threadfold.api
        import threadfold.loadtests
        assert threadfold.__file__.startswith(tuple(site.getsitepackages())), threadfold.__file__
        assert threadfold.Client and threadfold.HttpClient
        refused = {{}}
        for name in {INTERNALS!r}:
            try:
                __import__(name)
            except ModuleNotFoundError as exc:
                refused[name] = exc.name
        print(json.dumps(refused))
        """
    )
    refused = json.loads(answer.splitlines()[-1])
    assert refused == {name: name for name in INTERNALS}, answer


def test_every_installed_module_imports_but_those_of_an_extra(
    installed: Installed, wheel: Path
) -> None:
    """Each module of the install imports in the base install, but those that import an
    extra's package (Locust for the load tests, LangChain for the integrations): they may
    fail for want of it (or of what it brings), and for nothing else."""
    # A distribution's import name, as for every one of these: lower case, '_' for '-'.
    # Not optional: a base dependency that an extra names too (httpx), nor ourselves
    # (the test extra names threadfold[reference,loadtest]).
    names = {r: canonicalize_name(r.name).replace("-", "_") for r in _requirements(wheel)}
    base = {name for r, name in names.items() if not _is_optional(r)}
    optional = {name for r, name in names.items() if _is_optional(r)} - base - {PACKAGE}
    answer = installed.python_code(
        """
        import importlib, json, pkgutil, threadfold
        failed = {}
        names = [m.name for m in pkgutil.walk_packages(threadfold.__path__, "threadfold.")]
        for name in names:
            if name.endswith(".__main__"):
                continue  # runs the program
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                failed[name] = exc.name
        print(json.dumps({"modules": len(names), "failed": failed}))
        """
    )
    found = json.loads(answer.splitlines()[-1])
    assert found["modules"] >= 50, found
    wrong = {
        module: missing
        for module, missing in found["failed"].items()
        if not _imports(wheel, module) & optional
    }
    assert not wrong, f"modules that fail on a base dependency or a module of ours: {wrong}"


def _imports(wheel: Path, module: str) -> set[str]:
    """The top-level names a module of the wheel imports (anywhere in it)."""
    path = module.replace(".", "/")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        source = archive.read(f"{path}.py" if f"{path}.py" in names else f"{path}/__init__.py")
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_threadfold_command_runs(installed: Installed) -> None:
    usage = installed.run(str(installed.bin / PACKAGE), "--help")
    assert "usage: threadfold" in usage
    for command in ("up", "api", "worker", "beat", "status", "retry", "recompute"):
        assert command in usage
    assert "usage: threadfold api" in installed.run(str(installed.bin / PACKAGE), "api", "--help")


@pytest.fixture
def redis_for_install() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def test_the_installed_service_runs_end_to_end(
    installed: Installed, redis_for_install: RedisServer, tmp_path: Path
) -> None:
    """What a deployment runs, from the install alone: ``threadfold api`` and ``threadfold
    worker`` (the Lua scripts and Celery tasks loaded from site-packages), a client
    appending over HTTP and directly and reading its writes back, ``threadfold status``."""
    env = {"THREADFOLD_REDIS_URL": redis_for_install.url}
    threadfold = str(installed.bin / PACKAGE)
    assert "threads with a backlog: 0" in installed.run(threadfold, "status", env=env)

    port = free_port()
    processes = [
        ManagedProcess(
            [threadfold, *argv],
            env=clean_env({**env, "THREADFOLD_PORT": str(port)}),
            log_path=tmp_path / f"{argv[0]}.log",
            cwd=installed.outside,
        )
        for argv in (["api"], ["worker", "--concurrency", "1"])
    ]
    try:
        client = f"""
            import threadfold
            with threadfold.HttpClient("http://127.0.0.1:{port}") as http:
                done = http.append("over-http", [{{"role": "user", "content": "hi"}}])
                state = http.state("over-http", min_version=done.version, wait=30)
            assert [m["content"] for m in state.messages] == ["hi"], state
            with threadfold.Client() as direct:
                done = direct.append("direct", [("ai", "hello")])
                state = direct.state("direct", min_version=done.version, wait=30)
            assert [m["type"] for m in state.messages] == ["ai"], state
            print("ok")
            """

        wait_until(
            lambda: httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200,
            60,
            interval=0.1,
            ignore=(httpx.HTTPError,),
            message="the installed API did not start",
        )
        answer = installed.run(str(installed.python), "-c", textwrap.dedent(client), env=env)
        assert answer.splitlines()[-1] == "ok", answer
        page = httpx.get(f"http://127.0.0.1:{port}/ui", follow_redirects=True)
        assert page.status_code == 200 and "threadfold" in page.text, page.text[:300]
        script = httpx.get(f"http://127.0.0.1:{port}/ui/app.js")
        assert "javascript" in script.headers["content-type"], script.headers
    except BaseException:
        for process in processes:
            print(process.log_path.read_text())
        raise
    finally:
        for process in processes:
            process.kill()
    status = installed.run(threadfold, "status", "direct", env=env)
    assert "backlog" in status, status
