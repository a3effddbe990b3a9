"""``python -m threadfold.api``: serve the API (the environment is read here, once)."""

from __future__ import annotations

from threadfold.api.server import serve, settings_from_env

if __name__ == "__main__":
    serve(settings_from_env())
