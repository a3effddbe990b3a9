"""Debian's Chromium driven by Playwright (no downloaded browsers), and the stack the
page is tested against."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, sync_playwright

from tests.infra.missing import missing

#: The flags of a machine whose closed network refuses Chromium's own connections
#: (updates, sync, QUIC probes): they would hang or fill the log, not fail the test.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    """The browser binary: THREADFOLD_CHROMIUM, else Debian's ``chromium`` on the PATH.

    Missing, the test fails under CI (``.ci/run`` installs it) and is skipped elsewhere,
    saying how to get it."""
    found = os.environ.get("THREADFOLD_CHROMIUM") or shutil.which("chromium")
    if found and Path(found).is_file():
        return found
    missing("no Chromium: apt-get install chromium (or set THREADFOLD_CHROMIUM to a binary)")


@contextmanager
def browser_context(binary: str) -> Iterator[BrowserContext]:
    """A headless Chromium with a fresh profile of its own, closed afterwards."""
    with tempfile.TemporaryDirectory(prefix="tf-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=binary,
            headless=True,
            args=list(FLAGS),
            viewport={"width": 1360, "height": 820},
        )
        try:
            yield context
        finally:
            context.close()


def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: THREADFOLD_UI_ARTIFACTS, else a folder of pytest's."""
    given = os.environ.get("THREADFOLD_UI_ARTIFACTS")
    folder = Path(given) if given else tmp_path_factory.mktemp("ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the page: {folder}")
    return folder
