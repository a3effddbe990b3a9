"""How deep JSON data nests, and where it first nests deeper than allowed.

Every decoder and encoder threadfold uses (msgspec, ``json``) recurses once per level
of nesting and raises ``RecursionError`` near the interpreter's recursion limit: about
1,000 levels, fewer the deeper the caller's own stack. A message nested 900 levels deep
would be accepted by one process and then fail in another whose stack is deeper (a
worker decoding the log): a poison entry made on purpose. So ingestion refuses a message
nested deeper than a limit far below that, and says where.

Depth counts objects and arrays from the message: a message is level 1, its
``additional_kwargs`` level 2, an object held by one of their keys level 3.

The walks here loop over an explicit stack, never recurse, so input of any depth is
measured safely: :func:`too_deep` over a decoded message, :func:`too_deep_json` over
JSON text that the recursive decoder could not take.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import BaseMessage

#: Generous for anything LangChain and model providers send (tool schemas and
#: structured outputs nest tens of levels), and far below where a decoder fails.
DEFAULT_MAX_DEPTH: Final = 100
#: The highest limit a deployment may set: it leaves the frames of the deepest caller (a
#: Celery worker decoding a log entry) room below the interpreter's recursion limit.
HIGHEST_MAX_DEPTH: Final = 500

Step = str | int
Container = dict[Any, Any] | list[Any] | tuple[Any, ...]

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# What the encoders write as objects and arrays, and so recurse into.
_CONTAINERS: Final = (dict, list, tuple)
# msgpack's map and array headers (fixmap, fixarray, array 16/32, map 16/32), marked 1.
_HEADER_BYTES: Final = bytes(1 if 0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF else 0 for b in range(256))
# The tokens of JSON text that matter for nesting: strings (keys, and so that brackets
# inside them are skipped), brackets, and commas (they count array positions).
_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]', re.DOTALL)


def containers_at_most(payload: bytes) -> int:
    """An upper bound of the maps and arrays in msgpack ``payload``, so of its depth.

    Every byte that could be a map or array header is counted (string bytes too: a
    non-ASCII text adds some), in two passes in C: a delta whose bound is under the limit
    cannot nest deeper, and only the others are walked (about 0.2 us a delta where the
    walk costs 0.7-4 us a message).
    """
    return payload.translate(_HEADER_BYTES).count(1)


def path_text(prefix: str, steps: Sequence[Step]) -> str:
    """``("messages", 0, "additional_kwargs", "a.b")`` after ``prefix`` '' ->
    ``messages[0].additional_kwargs["a.b"]``.

    A key that is not a plain name is written as a JSON string in brackets, so that the
    path stays unambiguous (the API turns it into an RFC 6901 pointer).
    """
    out = [prefix]
    for step in steps:
        if isinstance(step, int):
            out.append(f"[{step}]")
        elif _NAME.fullmatch(step):
            out.append(f".{step}" if any(out) else step)
        else:
            out.append(f"[{json.dumps(step, ensure_ascii=False)}]")
    return "".join(out)


# A name, an index, or a key that is not a plain name as a JSON string in brackets
# (what path_text writes: ``additional_kwargs["a.b"]``).
_STEP: Final = re.compile(r'\[("(?:[^"\\]|\\.)*")\]|\.?([^.\[\]]+)|\[(\d+)\]')


def pointer(field: str) -> str:
    """``messages[3].tool_call_id`` -> ``/messages/3/tool_call_id`` (RFC 6901): the
    pointer of a path :func:`path_text` wrote, as the API's errors and the direct
    clients' name a field."""
    parts = [json.loads(m[1]) if m[1] else m[2] or m[3] for m in _STEP.finditer(field)]
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def too_deep(message: BaseMessage, limit: int) -> list[Step] | None:
    """The steps from ``message`` to its first object or array (in document order)
    nested deeper than ``limit`` levels; None when it nests no deeper."""
    # Most fields of most messages are strings or empty: those of level 2 are not pushed.
    stack: list[tuple[Container, int, tuple[Step, ...]]] = []
    for name in reversed(message.__struct_fields__):
        value = getattr(message, name)
        if value and isinstance(value, _CONTAINERS):
            stack.append((value, 2, (name,)))
    while stack:
        value, depth, steps = stack.pop()
        if depth > limit:
            return list(steps)
        items: Iterable[tuple[Step, Any]] = (
            value.items() if isinstance(value, dict) else enumerate(value)
        )
        children = [
            (child, depth + 1, (*steps, key))
            for key, child in items
            if isinstance(child, _CONTAINERS)
        ]
        children.reverse()  # popped first to last: document order
        stack.extend(children)
    return None


def check_depth(messages: Sequence[BaseMessage], limit: int, path: str = "messages") -> None:
    """Raise :class:`InvalidMessage` at the first place where one of ``messages`` nests
    deeper than ``limit`` levels, located under ``path`` (``messages[2].artifact.a``)."""
    for i, message in enumerate(messages):
        steps = too_deep(message, limit)
        if steps is not None:
            raise InvalidMessage(path_text(path, [i, *steps]), f"nested deeper than {limit} levels")


# The tokens of JSON text that locate a value: as _TOKEN's, and numbers.
_VALUE_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]|-?[0-9][0-9.eE+-]*', re.DOTALL)


def first_json(text: bytes, bad: Callable[[bytes], bool]) -> tuple[list[Step], bool] | None:
    """The steps to the first key or scalar (a string or a number, as its JSON token)
    of JSON ``text`` that ``bad`` holds, in document order, and whether it is a key
    (then the steps name the object that holds it); None when none is.

    For the refusal of a body a decoder gave up on without naming the place (a number
    out of range in a free-form object, a lone surrogate escape): read again here, on
    the failing path only, without recursion.
    """
    steps: list[Step] = []
    want_key = False
    for match in _VALUE_TOKEN.finditer(text):
        token = match[0]
        if token in (b"{", b"["):
            steps.append(0 if token == b"[" else "")
            want_key = token == b"{"
        elif token == b",":
            if steps and isinstance(steps[-1], int):  # in an array
                steps[-1] += 1
            else:
                want_key = True
        elif token in (b"}", b"]"):
            if steps:
                steps.pop()
        elif want_key and token[0] == 0x22:  # '"': a key
            if bad(token):
                return steps[:-1], True
            steps[-1] = json.loads(token)
            want_key = False
        elif bad(token):
            return list(steps), False
    return None


def too_deep_json(text: bytes, limit: int, outer: int = 0) -> list[Step] | None:
    """The steps to the first object or array of JSON ``text`` nested deeper than
    ``limit`` levels below its ``outer`` outermost ones; None when none is.

    For text a decoder has read up to where it gave up: it is well-formed up to there,
    and the walk stops there. ``outer`` is how deep a request body holds its messages
    (2 for ``{"messages": [...]}``), so that the levels counted are a message's.
    """
    steps: list[Step] = []  # per open container, the position in it: a key or an index
    want_key = False
    for match in _TOKEN.finditer(text):
        token = match[0]
        if token[0] == 0x22:  # '"'
            if want_key:
                steps[-1] = json.loads(token)
                want_key = False
        elif token in (b"{", b"["):
            if len(steps) - outer >= limit:
                return steps
            steps.append(0 if token == b"[" else "")
            want_key = token == b"{"
        elif token == b",":
            position = steps[-1]
            if isinstance(position, int):  # in an array
                steps[-1] = position + 1
            else:
                want_key = True
        else:  # a closing bracket
            steps.pop()
    return None
