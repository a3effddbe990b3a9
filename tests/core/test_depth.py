"""threadfold.core.depth: where a message first nests deeper than a limit, found without recursion,
the same in decoded messages and in JSON text; the msgpack bound never under-counts."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadfold.core.codec import encode_messages
from threadfold.core.depth import (
    Step,
    check_depth,
    containers_at_most,
    path_text,
    too_deep,
    too_deep_json,
)
from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import AIMessage, BaseMessage

KEYS = st.sampled_from(["a", "b", "a.b", "x/y~", 'q"', "", "é", "0"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=25,
)


def _nested(depth: int, leaf: Any = 1) -> Any:
    """``depth`` objects, one in the other (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = {"k": value}
    return value


def _first_too_deep(value: Any, limit: int, depth: int, steps: list[Step]) -> list[Step] | None:
    """The reference: the same search, recursive and obvious."""
    if not isinstance(value, dict | list):
        return None
    if depth > limit:
        return steps
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        found = _first_too_deep(child, limit, depth + 1, [*steps, key])
        if found is not None:
            return found
    return None


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(kwargs=st.dictionaries(KEYS, JSON, max_size=3), limit=st.integers(2, 6))
def test_the_walk_finds_what_the_recursive_reference_finds(
    kwargs: dict[str, Any], limit: int
) -> None:
    message = AIMessage(content="x", additional_kwargs=kwargs)
    # The message is level 1, additional_kwargs level 2 (limits start at 2 here, at 8
    # in a deployment: an empty additional_kwargs is never too deep).
    expected = _first_too_deep(kwargs, limit, 2, ["additional_kwargs"]) if kwargs else None
    assert too_deep(message, limit) == expected
    body = json.dumps({"messages": [{"additional_kwargs": kwargs}]}).encode()
    in_text = too_deep_json(body, limit, outer=2)
    assert in_text == (None if expected is None else ["messages", 0, *expected])


@settings(max_examples=200, deadline=None)
@given(kwargs=st.dictionaries(KEYS, JSON, max_size=3), artifact=JSON)
def test_the_msgpack_bound_is_never_below_the_depth(kwargs: dict[str, Any], artifact: Any) -> None:
    message = AIMessage(content="x", additional_kwargs=kwargs, response_metadata={"a": artifact})
    depth = 1 + max(_depth(kwargs), 1 + _depth(artifact), 1)
    assert containers_at_most(encode_messages([message])) >= depth


def test_input_far_deeper_than_the_interpreter_recursion_limit_is_measured() -> None:
    deep = _nested(100_000)
    message = AIMessage(content="x", additional_kwargs=deep)
    assert too_deep(message, 100) == ["additional_kwargs", *["k"] * 99]
    text = b'{"messages": [' + b'{"k": ' * 100_000 + b"1" + b"}" * 100_000 + b"]}"
    assert too_deep_json(text, 100, outer=2) == ["messages", 0, *["k"] * 100]


def test_check_depth_names_the_first_place_in_document_order() -> None:
    messages: list[BaseMessage] = [
        AIMessage(content="fine", additional_kwargs={"shallow": _nested(3)}),
        AIMessage(content=[{"type": "text", "text": "x", "deep": _nested(20)}]),
    ]
    check_depth(messages, 23)  # content is level 2, content[0] 3, "deep"'s 20 objects 4-23
    try:
        check_depth(messages, 10, "deltas[4].messages")
    except InvalidMessage as exc:
        assert exc.path == "deltas[4].messages[1].content[0].deep" + ".k" * 7
        assert exc.reason == "nested deeper than 10 levels"
    else:
        raise AssertionError("not refused")


def test_path_text_quotes_the_keys_that_are_not_plain_names() -> None:
    assert path_text("", ["messages", 0, "additional_kwargs", "a.b", 'q"', "x y", "é", 2]) == (
        'messages[0].additional_kwargs["a.b"]["q\\""]["x y"]["é"][2]'
    )
    assert path_text("deltas[1].messages", [0, "k"]) == "deltas[1].messages[0].k"


def test_brackets_and_quotes_inside_strings_are_not_nesting() -> None:
    text = json.dumps({"messages": [{"content": '[[[{{{\\"]]]', "k": [[["x"]]]}]}).encode()
    assert too_deep_json(text, 2, outer=2) == ["messages", 0, "k", 0]
    assert too_deep_json(text, 4, outer=2) is None
