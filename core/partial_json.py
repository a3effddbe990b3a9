"""Lenient JSON for streamed tool-call arguments (LangChain's ``parse_partial_json``).

A model streams a tool call's arguments a few characters at a time, so while a stream
is open the text is usually a prefix of a JSON document: ``{"city": "Pa``. LangChain
turns such a prefix into the value it most likely started (``{"city": "Pa"}``), and the
chunk validators derive ``tool_calls`` from that value. To give the same ``tool_calls``
we must try exactly the same candidate texts in the same order, because the first one
that parses wins:

1. the text as it is;
2. the text with an open string closed (a dangling escape dropped), raw newlines inside
   strings escaped, and the brackets that are still open closed in reverse order;
3. shorter and shorter prefixes of (2), each with the *same* closing brackets. After a
   failed attempt the prefix is cut just before the piece the decoder stopped at, since
   every longer prefix still holds that piece and fails there too; when the decoder
   stops inside the closing brackets, one piece is dropped.

A closing bracket that does not match the innermost open one means the text is not a
prefix of any JSON document; LangChain then returns ``None`` rather than raising. When
every candidate fails, the original text's own ``json.JSONDecodeError`` is raised.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from itertools import accumulate
from typing import Any, Final

__all__ = ["parse_partial_json"]

_CLOSER: Final = {"{": "}", "[": "]"}


def parse_partial_json(s: str, *, strict: bool = False) -> Any:
    """The value a (possibly truncated) JSON text most likely starts.

    ``strict`` is passed to :func:`json.loads`: when false, control characters are
    allowed inside strings. Raises :class:`json.JSONDecodeError` when no candidate
    parses; returns ``None`` for mismatched closing brackets.
    """
    try:
        return json.loads(s, strict=strict)
    except json.JSONDecodeError:
        pass
    scanned = _complete(s)
    if scanned is None:
        return None
    pieces, closers = scanned
    return _parse_longest_prefix(s, pieces, closers, strict=strict)


def _complete(s: str) -> tuple[list[str], str] | None:
    """``s`` as pieces (one per input character) plus the brackets that close it.

    Pieces are kept separate because a raw newline inside a string becomes two
    characters, and the decoder's error offsets must be mapped back to input characters.
    """
    pieces: list[str] = []
    open_closers: list[str] = []
    in_string = escaped = False
    for ch in s:
        piece = ch
        if in_string:
            if ch == '"' and not escaped:
                in_string = False
            elif ch == "\n" and not escaped:
                piece = "\\n"
            else:
                # Only a backslash that is not itself escaped starts an escape.
                escaped = ch == "\\" and not escaped
        elif ch == '"':
            in_string, escaped = True, False
        elif ch in _CLOSER:
            open_closers.append(_CLOSER[ch])
        elif ch in "}]":
            if not open_closers or open_closers[-1] != ch:
                return None
            open_closers.pop()
        pieces.append(piece)
    if in_string:
        if escaped:
            pieces.pop()  # a lone trailing backslash would escape the closing quote
        pieces.append('"')
    return pieces, "".join(reversed(open_closers))


def _parse_longest_prefix(s: str, pieces: list[str], closers: str, *, strict: bool) -> Any:
    """Parse the longest prefix of ``pieces`` that, closed by ``closers``, is JSON."""
    ends = list(accumulate(len(p) for p in pieces))
    while pieces:
        try:
            return json.loads("".join(pieces) + closers, strict=strict)
        except json.JSONDecodeError as exc:
            # Keep the pieces that end at or before the error offset; an error inside
            # the closers (offset past the last piece) costs exactly one piece.
            keep = min(bisect_right(ends, exc.pos), len(pieces) - 1)
            del pieces[keep:]
            del ends[keep:]
    return json.loads(s, strict=strict)
