"""Bearer tokens: who is asking, and so which tenant's keyspace they see."""

from __future__ import annotations

import hmac

from threadfold.core.errors import Unauthorized
from threadfold.core.keys import DEFAULT_TENANT


class Authenticator:
    """Maps ``Authorization: Bearer <token>`` to a tenant; everyone is the default
    tenant when no keys are configured."""

    def __init__(self, keys: dict[str, str] | None) -> None:
        self._keys = [(token.encode(), tenant) for token, tenant in (keys or {}).items()]

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def tenant(self, header: str | None) -> str:
        if not self._keys:
            return DEFAULT_TENANT
        if not header:
            raise Unauthorized("this API needs an 'Authorization: Bearer <key>' header")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("the Authorization header must be 'Bearer <key>'")
        given = token.strip().encode()
        found = None
        for known, tenant in self._keys:  # every key compared: no timing hint of a prefix
            if hmac.compare_digest(known, given):
                found = tenant
        if found is None:
            raise Unauthorized("unknown API key")
        return found
