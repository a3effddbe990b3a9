"""The `langchain` extra: what it brings, that the base install and the hot path never
load LangChain or LangGraph, and what importing an integration without them says."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.client.conftest import Stack
from tests.client.kinds import TOKEN, new_thread

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
INTEGRATED = {"langchain-core", "langgraph"}


def requirements(group: str | None) -> dict[str, Requirement]:
    listed = PROJECT["dependencies"] if group is None else PROJECT["optional-dependencies"][group]
    return {r.name: r for r in map(Requirement, listed)}


def test_the_langchain_extra_brings_both_in_ranges_that_hold_the_reference_pins() -> None:
    extra, reference = requirements("langchain"), requirements("reference")
    assert set(extra) == INTEGRATED == set(reference)
    for name, pinned in reference.items():
        [exact] = pinned.specifier
        assert extra[name].specifier.contains(exact.version), (name, str(extra[name]))
        assert not extra[name].specifier.contains("2.0.0"), name  # LangChain 2 drops the API


def test_the_base_install_does_not_bring_them() -> None:
    assert not INTEGRATED & set(requirements(None))


# A fresh interpreter: import the package, append and read back through both kinds of
# client, then look at what was loaded.
PROBE = """
import os, sys
import threadfold
thread = os.environ["PROBE_THREAD"]
with threadfold.Client() as client:
    done = client.append(thread, [{"role": "user", "content": "hi"}])
    state = client.state(thread, min_version=done.version, wait=20)
    assert [m["content"] for m in state.messages] == ["hi"], state
with threadfold.HttpClient(os.environ["PROBE_API"], os.environ["PROBE_KEY"]) as http:
    done = http.append(thread, [("ai", "hello")])
    assert len(http.state(thread, min_version=done.version, wait=20).messages) == 2
loaded = {name.split(".")[0] for name in sys.modules} & {"langchain_core", "langgraph"}
assert not loaded, sorted(loaded)
"""


def test_the_clients_never_load_langchain_or_langgraph(stack: Stack) -> None:
    settings = stack.settings
    env = {
        **os.environ,
        "THREADFOLD_REDIS_URL": settings.redis_url.get_secret_value(),
        "THREADFOLD_BROKER_URL": settings.broker,
        "THREADFOLD_QUEUE": settings.queue,
        "PROBE_THREAD": new_thread(),
        "PROBE_API": stack.api_url,
        "PROBE_KEY": TOKEN,
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("module", "missing"),
    [
        ("threadfold.langchain", "langchain_core"),
        ("threadfold.langgraph", "langgraph"),
        ("threadfold.langgraph", "langchain_core"),
    ],
)
def test_an_integration_without_its_extra_says_how_to_install_it(module: str, missing: str) -> None:
    probe = f"import sys; sys.modules[{missing!r}] = None; import {module}"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ModuleNotFoundError: {module} needs the 'langchain' extra"), last
    assert last.endswith("pip install 'threadfold[langchain]'"), last
