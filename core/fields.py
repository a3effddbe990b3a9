"""Field validators: what pydantic does to each message field in langchain-core 1.8.3.

Every function takes the raw value and the path of the field, returns the value as
LangChain would store it, or raises :class:`InvalidMessage` naming the path, what was
expected, and the exception class LangChain raises for the same value
(``lc_error``). Pure functions: no I/O, no clock.
"""

from __future__ import annotations

import re
from typing import Any, Final
from uuid import UUID

from threadfold.core.errors import InvalidMessage

_VALIDATION = "ValidationError"


def _kind(value: object) -> str:
    return type(value).__name__


def fail(path: str, reason: str, lc_error: str = _VALIDATION) -> InvalidMessage:
    """The error for ``path``; ``lc_error`` defaults to pydantic's ValidationError."""
    return InvalidMessage(path, reason, lc_error)


def content(value: Any, path: str) -> str | list[Any]:
    """``str | list[str | dict]`` in pydantic's lax mode.

    Bytes are decoded as UTF-8, and tuples and sets become lists, at both levels
    (sets only reach here from Python callers, never from JSON).
    """
    if isinstance(value, str | bytes | bytearray):
        text = optional_str(value, path)
        assert text is not None
        return text
    if isinstance(value, list | tuple | set | frozenset):
        return [_content_item(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise fail(path, f"expected a string or a list of strings/objects, got {_kind(value)}")


def _content_item(item: Any, path: str) -> Any:
    if isinstance(item, dict):
        return item
    if isinstance(item, str | bytes | bytearray):
        return optional_str(item, path)
    raise fail(path, f"expected a string or an object, got {_kind(item)}")


def tool_content(value: Any) -> str | list[Any]:
    """ToolMessage's ``coerce_args``: anything not a str or list goes through ``str()``."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [x if isinstance(x, str | dict) else str(x) for x in value]
    if isinstance(value, str):
        return value
    return str(value)


def mapping(value: Any, path: str) -> dict[str, Any]:
    """A plain dict field (``additional_kwargs``, ``response_metadata``, ``args``)."""
    if not isinstance(value, dict):
        raise fail(path, f"expected an object, got {_kind(value)}")
    return dict(value)


def str_mapping(value: Any, path: str) -> dict[str, Any]:
    """``dict[str, Any]`` (a tool call's ``args``): the keys must be strings too."""
    result = mapping(value, path)
    for key in result:
        if not isinstance(key, str):
            raise fail(f"{path}.{key}", f"expected string keys, got {_kind(key)}")
    return result


def optional_str(value: Any, path: str) -> str | None:
    """``str | None``; pydantic's lax mode also decodes UTF-8 bytes."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError as exc:
            raise fail(path, "expected a string, got bytes that are not UTF-8") from exc
    raise fail(path, f"expected a string or null, got {_kind(value)}")


def required_str(value: Any, path: str) -> str:
    """``str``: null is refused too."""
    if value is None:
        raise fail(path, "expected a string, got null")
    result = optional_str(value, path)
    assert result is not None
    return result


def message_id(value: Any, path: str) -> str | None:
    """``id``: ``coerce_numbers_to_str`` turns int/float into their decimal string."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if value is None or isinstance(value, str | bytes | bytearray):
        return optional_str(value, path)
    raise fail(path, f"expected a string, a number or null, got {_kind(value)}")


def tool_call_id(value: Any, path: str) -> str:
    """ToolMessage's ``tool_call_id``: UUIDs, bools and numbers go through ``str()``."""
    if isinstance(value, UUID | int | float):
        return str(value)
    return required_str(value, path)


#: Unicode White_Space: what pydantic-core (Rust's ``trim``) strips around a number.
#: Python's ``str.strip()`` would also strip U+001C..U+001F, which pydantic refuses.
_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
#: pydantic's integer text: ASCII digits, single underscores between them, an optional
#: sign, and a fraction of zeros only ("1.00" is 1; "1." and "1.5" are refused).
_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")


def lax_int(value: Any, path: str) -> int:
    """pydantic's lax int: bools, integral floats, integer strings and bytes."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str | bytes):
        text = _int_text(value)
        if text is not None:
            return int(text.partition(".")[0])
    raise fail(path, f"expected an integer, got {_kind(value)} {value!r}")


def _int_text(value: str | bytes) -> str | None:
    try:
        text = value.decode() if isinstance(value, bytes) else value
    except UnicodeDecodeError:
        return None
    text = text.strip(_WHITESPACE)
    return text if _INT_TEXT.fullmatch(text) else None


def optional_int(value: Any, path: str) -> int | None:
    """``int | None`` with the lax rules of :func:`lax_int`."""
    return None if value is None else lax_int(value, path)


def literal(value: Any, allowed: tuple[Any, ...], path: str) -> Any:
    """A ``Literal[...]`` field."""
    if value in allowed and not isinstance(value, bool):
        return value
    wanted = " or ".join(repr(a) for a in allowed)
    raise fail(path, f"expected {wanted}, got {value!r}")


_USAGE_TOTALS: Final = ("input_tokens", "output_tokens", "total_tokens")
_USAGE_DETAILS: Final = {
    "input_token_details": ("audio", "cache_creation", "cache_read"),
    "output_token_details": ("audio", "reasoning"),
}


def usage_metadata(value: Any, path: str) -> dict[str, Any] | None:
    """``UsageMetadata | None``: three required ints, typed details, extra keys kept."""
    if value is None:
        return None
    usage = mapping(value, path)
    for key in _USAGE_TOTALS:
        if key not in usage:
            raise fail(f"{path}.{key}", "required field is missing")
        usage[key] = lax_int(usage[key], f"{path}.{key}")
    for key, known in _USAGE_DETAILS.items():
        if key in usage:
            details = mapping(usage[key], f"{path}.{key}")
            for sub in known:
                if sub in details:
                    details[sub] = lax_int(details[sub], f"{path}.{key}.{sub}")
            usage[key] = details
    return usage
