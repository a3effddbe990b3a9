"""A body msgspec would not decode, as the precise refusal it answers.

Every refusal the API answers is a class of the thread service's one error tree
(:mod:`threadfold.core.errors`), with its status and code: the routes raise
them, the server's guard answers the transport's (408, 431) before the application sees
the request, and ``RequestError.body()`` is the JSON error. Nothing else reaches a
client: an unexpected exception is logged and answered as a 500 without internals, and
the tests (schemathesis included) demand that never happens.
"""

from __future__ import annotations

import re

import msgspec

from threadfold.core.depth import path_text
from threadfold.core.errors import InvalidInput

_MSGSPEC_PATH = re.compile(r" - at `\$(.*)`$")
_FIELD_NAMED = re.compile(r"^Object (contains unknown|missing required) field `(.+)`$")


def from_msgspec(exc: msgspec.ValidationError) -> InvalidInput:
    """msgspec's ``Expected `int`, got `str` - at `$.deltas[0].thread_id``` as an InvalidInput
    whose field is the JSON path (``deltas[0].thread_id``)."""
    text = str(exc)
    match = _MSGSPEC_PATH.search(text)
    path = match[1].lstrip(".") if match else ""
    reason = _MSGSPEC_PATH.sub("", text)
    named = _FIELD_NAMED.match(reason)
    if named:
        field = path_text(path, [named[2]])
        what = "unknown field" if named[1].startswith("contains") else "required field is missing"
        return InvalidInput(f"{field}: {what}", field=field)
    reason = reason.replace("`", "'")
    reason = reason[0].lower() + reason[1:]
    if "[...]" in path:
        # msgspec writes a key of a free-form object, which it does not name, as [...]:
        # the field is then the nearest value it does name.
        path = path[: path.index("[...]")]
        reason = f"{reason} (in a value nested in it)"
    return InvalidInput(f"{path}: {reason}" if path else reason, field=path or None)
