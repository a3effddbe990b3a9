"""A thread's metadata: a small object of named scalars, what it may hold and how it is
stored and indexed.

Metadata is what a backend finds its threads by (a user, an agent, a run, a status of
its own), so every value is an index term and search is an exact match: values are
JSON scalars (strings, integers, finite floats, booleans), never objects or lists,
whose equality would depend on an encoding. A float with an integral value is stored
as the integer (``1.0`` is ``1``), as JSON itself does not tell them apart.

Each value is stored as its canonical JSON (msgspec's encoding of the scalar), the
bytes the scripts compare and hash: a term is the first 16 hex digits of the SHA-1 of
``<key>\\n<value json>`` (computed by Lua's ``redis.sha1hex`` in the scripts and by
:func:`term` here for a search), and a search checks each candidate's stored values
too, so a hash collision can cost a check, never a wrong answer.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from threadfold.core.depth import path_text
from threadfold.core.errors import InvalidInput

#: What a key may be: a name, as a thread id's characters (no spaces, no newline: the
#: term hashes ``key\nvalue``).
KEY_PATTERN: Final = re.compile(r"[A-Za-z0-9._:@-]{1,64}")
KEY_RULE: Final = "1 to 64 characters from A-Z a-z 0-9 . _ : @ -"

#: The limits of one thread's metadata (a refused change leaves it as it was).
MAX_KEYS: Final = 32
MAX_VALUE_BYTES: Final = 512  # one value's JSON
MAX_TOTAL_BYTES: Final = 4096  # every key and value JSON together

#: Hex digits of a term (64 bits: collisions are checked away, see the module's text).
TERM_DIGITS: Final = 16

_encode: Final = msgspec.json.Encoder().encode
_decode: Final = msgspec.json.decode

Scalar = str | int | float | bool
#: A change of metadata: key -> its value's JSON, or None to delete the key.
Changes = dict[str, bytes | None]


def canonical(value: object, field: str) -> bytes:
    """The stored JSON of one value, or a 422 naming ``field``."""
    if isinstance(value, bool | str):
        encoded = _encode(value)
    elif isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise InvalidInput(f"{field}: integers are 64-bit", field=field)
        encoded = _encode(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{field}: a number must be finite", field=field)
        encoded = _encode(int(value)) if value.is_integer() and abs(value) < 2**63 else (
            _encode(value)
        )
    else:
        raise InvalidInput(
            f"{field}: a metadata value is a string, number or boolean; got "
            f"{type(value).__name__}",
            field=field,
        )
    if len(encoded) > MAX_VALUE_BYTES:
        raise InvalidInput(
            f"{field}: at most {MAX_VALUE_BYTES} bytes of JSON per value", field=field
        )
    return encoded


def _key(key: object, field: str) -> str:
    if not isinstance(key, str) or KEY_PATTERN.fullmatch(key) is None:
        raise InvalidInput(f"{field}: a metadata key is {KEY_RULE}; got {key!r}", field=field)
    return key


#: Why a null is refused where it deletes nothing (``changes``' ``nulls``).
NEW_THREAD_NULLS: Final = "a new thread's metadata has no nulls"
FILTER_NULLS: Final = (
    "a metadata filter matches stored values, and no value is null (leave the key out "
    "to match any)"
)


def changes(
    given: object,
    field: str = "metadata",
    *,
    deletes: bool = True,
    nulls: str = NEW_THREAD_NULLS,
) -> Changes:
    """A metadata object checked: each key's value JSON, None where ``deletes`` lets a
    null delete the key (else refused, saying ``nulls``). The limits that depend on
    what is stored (keys, total size) are the script's to check; the ones that do not
    are checked here too, so most refusals name their key before any I/O: each as
    ``metadata.key``, or ``metadata["a b"]`` for a key that is not a plain name
    (``metadata[""]`` for an empty one; pointer ``/metadata/``)."""
    if not isinstance(given, Mapping):
        raise InvalidInput(f"{field}: expected an object", field=field)
    out: Changes = {}
    for key, value in given.items():
        at = path_text(field, [key]) if isinstance(key, str) else field
        name = _key(key, at)
        if value is None:
            if not deletes:
                raise InvalidInput(f"{at}: {nulls}", field=at)
            out[name] = None
        else:
            out[name] = canonical(value, at)
    if sum(v is not None for v in out.values()) > MAX_KEYS:
        raise InvalidInput(f"{field}: at most {MAX_KEYS} keys", field=field)
    if total_bytes({k: v for k, v in out.items() if v is not None}) > MAX_TOTAL_BYTES:
        raise InvalidInput(f"{field}: at most {MAX_TOTAL_BYTES} bytes in all", field=field)
    return out


def total_bytes(stored: Mapping[str, bytes]) -> int:
    """What the total-size limit counts: every key and value JSON."""
    return sum(len(k) + len(v) for k, v in stored.items())


def filters(given: object, field: str = "metadata") -> dict[str, bytes]:
    """A search's metadata filter: key -> the value JSON a thread must hold."""
    checked = changes(given, field, deletes=False, nulls=FILTER_NULLS)
    return {k: v for k, v in checked.items() if v is not None}


def term(key: str, value_json: bytes) -> str:
    """The index term of one key and value (as the scripts compute it)."""
    return hashlib.sha1(key.encode() + b"\n" + value_json, usedforsecurity=False).hexdigest()[
        :TERM_DIGITS
    ]


def pairs(changes_: Mapping[str, bytes | None]) -> list[str | bytes]:
    """A change as the scripts take it: key, value JSON ('' = delete), in order."""
    out: list[str | bytes] = []
    for key, value in changes_.items():
        out += [key, b"" if value is None else value]
    return out


def decoded(stored: Mapping[str, bytes]) -> dict[str, Any]:
    """Stored metadata as the values it holds, keys in order."""
    return {k: _decode(stored[k]) for k in sorted(stored)}
