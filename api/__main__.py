"""``python -m threadfold.api``: serve the API (the environment is read here, once)."""

from __future__ import annotations

import argparse

from threadfold.api.server import serve, settings_from_env

if __name__ == "__main__":
    # No options: every setting is a THREADFOLD_* variable. Parsed anyway so that
    # --help answers instead of starting a server.
    argparse.ArgumentParser(
        prog="python -m threadfold.api",
        description="Serve the threadfold HTTP API; settings come from THREADFOLD_* variables.",
    ).parse_args()
    serve(settings_from_env())
