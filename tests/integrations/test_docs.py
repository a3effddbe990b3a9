"""Every Python example of docs/integrations.md runs as it is, in a fresh interpreter,
against the real stack (its THREADFOLD_* settings in the environment). A block right
after an ``<!-- not-run -->`` line is not run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.conftest import Stack

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations.md"
BLOCK = re.compile(r"(<!-- not-run -->\n)?```python\n(.*?)```", re.DOTALL)


def examples() -> list[str]:
    return [code for skip, code in BLOCK.findall(DOC.read_text()) if not skip]


def test_the_doc_has_examples() -> None:
    assert len(examples()) >= 3


@pytest.mark.parametrize("index", range(len(examples())))
def test_an_example_runs(index: int, stack: Stack) -> None:
    settings = stack.settings
    env = {
        **os.environ,
        "THREADFOLD_REDIS_URL": settings.redis_url.get_secret_value(),
        "THREADFOLD_BROKER_URL": settings.broker,
        "THREADFOLD_QUEUE": settings.queue,
    }
    done = subprocess.run(
        [sys.executable, "-c", examples()[index]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
