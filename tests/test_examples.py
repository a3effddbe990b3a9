"""Every code example of the README and the docs runs, against a real local stack.

Each Markdown file's ``python`` blocks run in order in one namespace (a block may use
what an earlier one made), top-level ``await`` on one event loop; its ``sh`` blocks run
in bash (``set -euo pipefail``; curl fails on an HTTP error). They run against a
redis-server, a Celery worker process and an API process of this test's own, with
``THREADFOLD_REDIS_URL`` naming its Redis. The examples address the API as ``make run``
serves it, ``localhost:8000``: that address is replaced by the test API's.

A block that cannot run (``make run``, a deployment's URL) is marked on the line before
its fence, ``<!-- not-run: why -->`` (tests/doc_blocks.py); the reason is required.
Marked blocks are still checked for syntax. The clients the examples leave open are
closed after their file.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import threadfold
from tests.doc_blocks import NOT_CODE, ROOT, RUN, Block, blocks, markdown_files
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, start_worker

FILES = markdown_files()
BLOCKS = [block for path in FILES for block in blocks(path)]
RUNNABLE_FILES = sorted({block.path for block in BLOCKS if block.runs})

#: How ``make run`` serves the API, as the examples write it.
DOCUMENTED_API = re.compile(r"\b(?:localhost|127\.0\.0\.1):8000\b")

#: Before every sh block: fail on the first error, and on an HTTP error status (curl
#: exits 0 on a 4xx otherwise). The body is still printed, for the failure's message.
SH_PRELUDE = """set -euo pipefail
curl() { command curl --fail-with-body --show-error "$@"; }
"""

SH_TIMEOUT = 120.0  # a bound for a hung block, far above any example's run
WORKER_START_TIMEOUT = 120.0  # a bound for a worker that never starts (a loaded machine)

#: An install in an example would change the venv the tests run in: such a block is
#: marked, and tests/packaging installs into venvs of its own.
INSTALLS = re.compile(r"\b(?:pip3?|uv|apt-get|apt|brew)\b[^\n]*\binstall\b")


@dataclass(frozen=True)
class Stack:
    api: str  # host:port
    env: dict[str, str]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("examples")
    with RedisServer() as server:
        settings = make_settings(server.url)
        api, url = start_api(settings, logs)
        worker = start_worker(settings, "examples", logs)
        try:
            # The examples wait seconds for their writes: the worker must be up first.
            with threadfold.Client(settings=settings) as probe:
                done = probe.append("examples-ready", ["ready?"])
                probe.wait_for("examples-ready", done.version, WORKER_START_TIMEOUT)
            yield Stack(url.removeprefix("http://"), {"THREADFOLD_REDIS_URL": server.url})
        finally:
            api.kill()
            worker.kill()


# -- every block is run or says why not ---------------------------------------------------


def test_every_code_block_is_run_or_marked_with_a_reason() -> None:
    problems = []
    for block in BLOCKS:
        if block.language not in (*RUN, *NOT_CODE):
            problems.append(
                f"{block.where}: a block of language {block.language!r}: "
                f"give it one of {', '.join(RUN + NOT_CODE)} (text: not code)"
            )
        elif block.not_run == "":
            problems.append(f"{block.where}: say why it is not run: <!-- not-run: reason -->")
        elif block.not_run is not None and block.language in NOT_CODE:
            problems.append(f"{block.where}: a {block.language} block is never run: no mark")
        elif block.runs and INSTALLS.search(block.source):
            problems.append(f"{block.where}: it installs: <!-- not-run: reason -->")
    assert not problems, "\n".join(problems)
    run = [b for b in BLOCKS if b.runs]
    assert len({b.path for b in run}) >= 2, "the examples of README.md and docs/ are run"
    assert sum(b.path == "README.md" and b.language == "python" for b in run) >= 3


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.not_run], ids=lambda b: b.where if isinstance(b, Block) else ""
)
def test_a_block_that_is_not_run_is_still_well_formed(block: Block) -> None:
    if block.language == "python":
        _compile(block)
    else:
        done = subprocess.run(
            ["bash", "-n"], input=block.source, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{block.where}: {done.stderr}"


# -- the examples run ----------------------------------------------------------------------


# docs/integrations.md shows LangChain's RunnableWithMessageHistory, which langchain-core
# 1.x marks deprecated (to go in 2.0: the langchain extra pins <2); a user sees a warning,
# not the error this suite makes of every warning.
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
@pytest.mark.parametrize("path", RUNNABLE_FILES)
def test_the_examples_run(path: str, stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("THREADFOLD_")]:
        monkeypatch.delenv(name)
    for name, value in stack.env.items():
        monkeypatch.setenv(name, value)
    namespace: dict[str, Any] = {"__name__": "__example__"}
    with asyncio.Runner() as loop:
        try:
            for block in (b for b in BLOCKS if b.path == path and b.runs):
                if block.language == "python":
                    _run_python(block, namespace, loop, stack)
                else:
                    _run_sh(block, stack)
        finally:
            _close_clients(namespace, loop)


def _compile(block: Block, source: str | None = None) -> Any:
    """The block's code, its lines numbered as in its file (tracebacks name them)."""
    text = "\n" * (block.line - 1) + (block.source if source is None else source)
    return compile(text, block.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def _run_python(
    block: Block, namespace: dict[str, Any], loop: asyncio.Runner, stack: Stack
) -> None:
    code = _compile(block, DOCUMENTED_API.sub(stack.api, block.source))
    if code.co_flags & inspect.CO_COROUTINE:  # top-level await: a coroutine to run
        loop.run(eval(code, namespace))  # noqa: S307  # the repository's own examples
    else:
        exec(code, namespace)  # noqa: S102  # the repository's own examples


def _run_sh(block: Block, stack: Stack) -> None:
    env = {
        **os.environ,
        **stack.env,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    script = SH_PRELUDE + DOCUMENTED_API.sub(stack.api, block.source)
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SH_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, (
        f"{block.where}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    )


def _close_clients(namespace: dict[str, Any], loop: asyncio.Runner) -> None:
    for value in namespace.values():
        if isinstance(value, threadfold.Client | threadfold.HttpClient):
            value.close()
        elif isinstance(value, threadfold.AsyncClient | threadfold.AsyncHttpClient):
            loop.run(value.close())
