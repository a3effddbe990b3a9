"""Dependency direction: api -> workers -> core; core imports neither; nothing imports api."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sources import LINKED, PACKAGE, python_files

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["core", "workers", "api", "threadfold", "loadtests", "bench"]


INTERNAL = set(LINKED)
STDLIB = sys.stdlib_module_names


def _layer(module: str) -> str:
    """The layer a module belongs to: ``threadfold.workers.runtime.drain`` -> ``workers``.

    The client facade (``threadfold``, ``threadfold.client``, ...) is ``threadfold``; a
    third-party module is its own top-level name.
    """
    parts = module.split(".")
    if parts[0] == "threadfold":
        return parts[1] if len(parts) > 1 and parts[1] in INTERNAL else "threadfold"
    return parts[0]


def _modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module == "threadfold":  # from threadfold import core
                found.update(f"threadfold.{alias.name}" for alias in node.names)
    return found


def _imports(path: Path) -> set[str]:
    return {_layer(module) for module in _modules(path)}


def _package_imports(package: str, *, skip: frozenset[str] = frozenset()) -> set[str]:
    found: set[str] = set()
    for path in python_files(package):
        if path.name not in skip:
            found |= _imports(path)
    return found


def test_core_imports_neither_workers_nor_api() -> None:
    assert not _package_imports("core") & {"workers", "api", "loadtests"}


@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "api"])
def test_nothing_outside_api_imports_api(package: str) -> None:
    """The HTTP layer is the product's top: nothing of the product imports it (the
    benchmarks drive it through HTTP, as a client does)."""
    if not (ROOT / package).exists():
        pytest.fail(f"missing top-level package {package}")
    assert "api" not in _package_imports(package)


def test_workers_do_not_import_the_http_layer() -> None:
    assert "api" not in _package_imports("workers")


def test_core_does_no_io() -> None:
    """Pure logic: no sockets, no Redis, no Celery, no environment in core."""
    forbidden = {"redis", "celery", "kombu", "socket", "requests", "httpx", "os", "time"}
    assert not _package_imports("core") & forbidden


#: The only modules of ours that import LangChain or LangGraph: the integrations, which
#: the `langchain` extra serves (threadfold.langchain, threadfold.langgraph).
INTEGRATIONS = frozenset({"langchain.py", "langgraph.py", "checkpointer.py"})


def test_the_reference_implementation_is_a_test_only_dependency() -> None:
    for package in ["core", "workers", "api", "threadfold"]:
        skip = INTEGRATIONS if package == "threadfold" else frozenset()
        found = _package_imports(package, skip=skip) & {"langgraph", "langchain_core"}
        assert not found, package


@pytest.mark.parametrize("package", [*PACKAGES, "tests"])
def test_every_import_of_ours_goes_through_the_threadfold_namespace(package: str) -> None:
    """``import core`` would load a second copy of a module (or a user's own ``core``)."""
    for path in (ROOT / package).rglob("*.py"):
        bare = {m for m in _modules(path) if m.split(".")[0] in INTERNAL}
        assert not bare, f"{path.relative_to(ROOT)} imports {sorted(bare)}"


def test_bench_imports_nothing_of_the_tests() -> None:
    """The oracle a run's states are checked against is the product's
    (:mod:`threadfold.testing`); the rest a benchmark needs is bench's own. Tests may
    import bench (in tests/bench), never the other way."""
    for path in (ROOT / "bench").rglob("*.py"):
        found = {m for m in _modules(path) if m.split(".")[0] == "tests"}
        assert not found, f"{path.relative_to(ROOT)} imports {sorted(found)}"


def test_the_oracle_imports_only_the_reducers_and_itself() -> None:
    """``threadfold.testing`` runs beside any client (and in Locust's gevent): it
    imports the reducers and, for its types only, the client contract; no engine, no
    Redis, Celery or httpx."""
    allowed = {"threadfold.core", "threadfold.types", "msgspec", "__future__"}
    for path in (ROOT / PACKAGE / "testing").rglob("*.py"):
        if path.name == "stored.py":
            # The store-side helpers of harnesses beside Redis: imported by name only
            # (the next test), through the engine's doors (the front ends' test).
            continue
        found = {
            m for m in _modules(path)
            if not m.startswith("threadfold.testing") and m.split(".")[0] not in STDLIB
        }
        assert found <= allowed, f"{path.relative_to(ROOT)} imports {sorted(found - allowed)}"


def test_importing_the_oracle_loads_no_client_or_service() -> None:
    code = (
        "import sys, threadfold.testing; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'redis', 'celery', 'kombu', 'httpx', 'starlette', 'uvicorn'} "
        "or m.startswith(('threadfold.workers', 'threadfold.api', 'threadfold.types'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_the_tests_import_the_benchmarks_only_in_their_smoke_tests() -> None:
    """Tests and benchmarks in their places: only tests/bench runs benchmark code."""
    for path in (ROOT / "tests").rglob("*.py"):
        if path.is_relative_to(ROOT / "tests" / "bench"):
            continue
        found = {m for m in _modules(path) if m.split(".")[0] == "bench"}
        assert not found, f"{path.relative_to(ROOT)} imports {sorted(found)}"


#: The engine's doors for its two front ends (the HTTP API, the clients): the thread
#: service, the feed (live threads), the settings and the composition root that builds
#: a service from them (and says a process's start). Every thread operation is the
#: service's, so a front end needs nothing else of the engine to serve one.
ENGINE_DOORS = (
    "threadfold.workers.threads",
    "threadfold.workers.feed",
    "threadfold.workers.settings",
    "threadfold.workers.wiring",
)
#: What the API process reads of the engine besides: the counters every process keeps
#: (/metrics, /pipeline, the request counts), and, at its edge, logging with secrets
#: masked.
API_PROCESS = {
    "api/app.py": ("threadfold.workers.metrics",),
    "api/feed.py": ("threadfold.workers.metrics",),
    "api/pipeline.py": ("threadfold.workers.metrics",),
    "api/metrics.py": ("threadfold.workers.metrics",),
    "api/server.py": ("threadfold.workers.logs", "threadfold.workers.redact"),
}


def _engine_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if node.module == "threadfold.workers":
                found.update(names[1:])
            elif node.module.startswith("threadfold.workers."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("threadfold.workers"))
    return found


@pytest.mark.parametrize(
    "path",
    [*python_files("api"), *python_files("threadfold")],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_the_front_ends_reach_the_engine_through_its_doors(path: Path) -> None:
    """The API and the clients import of the engine only the thread service, the feed
    and the settings (and the API process its counters and its start)."""
    allowed = ENGINE_DOORS + API_PROCESS.get(str(path.relative_to(ROOT)), ())
    stray = {
        m for m in _engine_imports(path)
        if not any(m == door or m.startswith(door + ".") for door in allowed)
    }
    assert not stray, f"{path.relative_to(ROOT)} imports {sorted(stray)}"


@pytest.mark.parametrize("folder", LINKED)
def test_the_package_links_to_each_top_level_folder(folder: str) -> None:
    """threadfold/core, /workers, /api, /loadtests are links to the folders at the top
    (the one installed package, packages.find following them), not copies."""
    link = ROOT / PACKAGE / folder
    assert link.is_symlink(), f"{PACKAGE}/{folder} is not a link"
    assert link.resolve() == (ROOT / folder).resolve()


#: The engine's rooms, each importing only the rooms before it: Redis I/O, the data
#: model, replay and the feed over it, ingest, the thread service over all of them (an
#: append wakes workers through the waker it is given, never Celery itself), the Celery
#: runtime (its worker and tasks build what they use with the wiring), then the
#: operator's tools. settings, wiring (the composition root: the one place clients,
#: stores, producers, wakers and services are built), metrics, logs and redact are
#: modules of workers/ itself; a room reaches the later rooms through none of them, so
#: only the runtime, the tools and the front ends import the wiring.
ROOMS = ("redisio", "storage", "replay", "feed", "ingest", "threads", "runtime", "ops")


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["threadfold", "workers"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in ROOMS else None


def _engine_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in (ROOT / "workers").rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        name = "threadfold." + ".".join(parts)
        graph[name] = {m for m in _engine_imports(path) if m != name}
    return graph


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """What ``start`` imports, and what those import, through the top-level modules of
    workers/ (a room's own modules are followed by their own test)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                if _room(nxt) is None:  # settings, wiring, metrics, logs, redact
                    todo.append(nxt)
    return seen


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_of_the_engine_imports_only_the_rooms_before_it(room: str) -> None:
    later = set(ROOMS[ROOMS.index(room) + 1 :])
    graph = _engine_graph()
    for name in sorted(graph):
        if _room(name) == room:
            found = {r for r in map(_room, _reached(graph, name)) if r in later}
            assert not found, f"{name} reaches the later rooms {sorted(found)}"


def test_the_engine_modules_import_no_cycle() -> None:
    """Module by module, workers/ imports no cycle."""
    graph = _engine_graph()
    done: set[str] = set()

    def visit(node: str, trail: tuple[str, ...]) -> None:
        if node in trail:
            raise AssertionError(" -> ".join([*trail[trail.index(node) :], node]))
        if node in done or node not in graph:
            return
        for nxt in graph[node]:
            visit(nxt, (*trail, node))
        done.add(node)

    for start in sorted(graph):
        visit(start, ())
