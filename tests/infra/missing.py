"""What a test does when a service or tool of the machine it needs is missing."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    """Fail under CI, skip elsewhere, saying ``reason``.

    CI (``CI=true``) runs on a machine that ``.ci/run`` provisions with everything the
    tests use, so an absence there is a broken CI, not a test to leave out; a developer's
    machine may lack a browser or a RabbitMQ, and the rest of the suite still runs."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)
