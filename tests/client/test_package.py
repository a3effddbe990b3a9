"""The package's front: names load on first use, so a part of the package (or one kind
of client) does not pull in what the others need."""

from __future__ import annotations

import subprocess
import sys

import pytest

import threadfold
from tests.workers.harness import ROOT
from threadfold.retry import RetryPolicy

PROBE = """
import sys
import threadfold, threadfold.errors, threadfold.types
heavy = {"redis", "celery", "kombu", "httpx"}
assert not heavy & set(sys.modules), sorted(heavy & set(sys.modules))
threadfold.HttpClient
assert "httpx" in sys.modules and not {"redis", "celery"} & set(sys.modules)
threadfold.Client
assert {"redis", "celery"} <= set(sys.modules)
"""


def test_names_are_loaded_on_first_use() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_every_public_name_resolves() -> None:
    for name in threadfold.__all__:
        assert getattr(threadfold, name) is not None
    assert set(threadfold.__all__) <= set(dir(threadfold))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        threadfold.Nope  # noqa: B018  # the lookup is the test


@pytest.mark.parametrize(
    "options",
    [{"retries": -1}, {"retries": 1.5}, {"backoff": float("nan")}, {"max_backoff": -1}],
)
def test_a_bad_retry_policy_is_refused_by_name(options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=f"^{next(iter(options))}: expected"):
        RetryPolicy(**options)  # type: ignore[arg-type]


def test_an_http_client_needs_an_http_url_and_a_timeout() -> None:
    with pytest.raises(ValueError, match=r"^base_url: "):
        threadfold.HttpClient("redis://127.0.0.1:6379")
    for timeout in (0, -1, float("inf"), "10"):
        with pytest.raises(ValueError, match=r"^timeout: "):
            threadfold.HttpClient("http://127.0.0.1:1", timeout=timeout)  # type: ignore[arg-type]
