"""``python -m api``: serve the API (the environment is read here, once)."""

from __future__ import annotations

from api.server import serve
from api.settings import ApiSettings

if __name__ == "__main__":
    serve(ApiSettings())
