"""The deploy tests' fixture: settings loaded from a manifest's environment."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.deploy.manifests import SETTING_NAMES, LoadSettings
from threadfold.api.settings import ApiSettings


@pytest.fixture
def settings_from_env(monkeypatch: pytest.MonkeyPatch) -> LoadSettings:
    """Load ApiSettings from exactly the given THREADFOLD_* variables, as a process would."""

    def load_settings(env: Mapping[str, str]) -> ApiSettings:
        for name in SETTING_NAMES:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return ApiSettings()

    return load_settings
