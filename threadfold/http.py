"""``threadfold.HttpClient`` and ``AsyncHttpClient``: the same operations as the direct
clients, against a remote deployment's HTTP API: the client front over the HTTP
transport (``threadfold/_async/http.py``, the sync one generated from it)."""

from threadfold._async.http import AsyncHttpClient
from threadfold._sync.http import HttpClient

__all__ = ["AsyncHttpClient", "HttpClient"]
