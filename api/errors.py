"""A body msgspec would not decode, as the precise refusal it answers.

Every refusal the API answers is a class of the thread service's one error tree
(:mod:`threadfold.core.errors`), with its status and code: the routes raise
them, the server's guard answers the transport's (408, 431) before the application sees
the request, and ``RequestError.body()`` is the JSON error. Nothing else reaches a
client: an unexpected exception is logged and answered as a 500 without internals, and
the tests (schemathesis included) demand that never happens.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

import msgspec

from threadfold.core.depth import Step, first_json, path_text
from threadfold.core.errors import BadRequest, InvalidInput

_MSGSPEC_PATH = re.compile(r" - at `\$(.*)`$")
_FIELD_NAMED = re.compile(r"^Object (contains unknown|missing required) field `(.+)`$")


def from_msgspec(exc: msgspec.ValidationError, body: bytes | None = None) -> InvalidInput:
    """msgspec's ``Expected `int`, got `str` - at `$.deltas[0].thread_id``` as an InvalidInput
    whose field is the JSON path (``deltas[0].thread_id``). A number out of range in a
    free-form object, whose key msgspec does not name, is found in ``body``."""
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
    if "[...]" in path and body is not None and reason == "number out of range":
        found = _located(body, _out_of_range)
        if found is not None and not found[1]:
            field = path_text("", found[0])
            return InvalidInput(
                f"{field}: number out of range (a float must be finite)", field=field
            )
    if "[...]" in path:
        # msgspec writes a key of a free-form object, which it does not name, as [...]:
        # the field is then the nearest value it does name.
        path = path[: path.index("[...]")]
        reason = f"{reason} (in a value nested in it)"
    return InvalidInput(f"{path}: {reason}" if path else reason, field=path or None)


def from_decode(exc: msgspec.DecodeError, body: bytes) -> BadRequest:
    """A body that is not JSON text, as a 400; a string holding a lone UTF-16 surrogate
    escape (``"\\ud800"``: no Unicode character, so no JSON text), which msgspec
    reports without its place ("Input data was truncated"), names the field."""
    found = _located(body, _lone_surrogate)
    if found is None:
        return BadRequest(f"the body is not valid JSON: {exc}")
    steps, key = found
    field = path_text("", steps) or None
    what = ("a key of it holds" if key else "it holds") if field else "the body holds"
    reason = (
        f"{what} a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which "
        "is no Unicode character: the body is not valid JSON"
    )
    return BadRequest(f"{field}: {reason}" if field else reason, field=field)


def _located(body: bytes, bad: Callable[[bytes], bool]) -> tuple[list[Step], bool] | None:
    try:
        return first_json(body, bad)
    except ValueError:  # a token JSON cannot read: the place is not known
        return None


def _out_of_range(token: bytes) -> bool:
    return token[0] != 0x22 and math.isinf(float(token))


def _lone_surrogate(token: bytes) -> bool:
    if token[0] != 0x22 or b"\\u" not in token:
        return False
    text: str = json.loads(token)  # Python's json reads a lone surrogate as one
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)
