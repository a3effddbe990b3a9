"""The fast path and the general path of conversion agree on every input the fast path takes.

``threadfold.core.fastpath`` recognises common dict shapes and builds them directly; this runs the
whole random corpus, plus the common shapes with every variation that stays "common",
through both and demands identical messages. It also checks that the fast path really
takes the shapes the service sees most, so a change cannot silently make it useless.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from tests.differential.message_corpus import corpus
from threadfold.core.convert import _convert
from threadfold.core.dump import dump_message
from threadfold.core.errors import InvalidMessage
from threadfold.core.fastpath import fast_message

COMMON: list[dict[str, Any]] = [
    {"role": "user", "content": "hi"},
    {"role": "user", "content": "hi", "id": "1", "name": "bob"},
    {"type": "human", "content": [{"type": "text", "text": "a"}, "b"], "id": "2"},
    {"role": "assistant", "content": None, "id": "3"},
    {"role": "system", "content": "", "response_metadata": {}},
    {"type": "ai", "content": "x", "response_metadata": {"model_name": "m"}, "id": "4"},
    {"type": "ai", "content": "x", "additional_kwargs": {"refusal": None}, "id": "5"},
    {"role": "tool", "content": "42", "tool_call_id": "c1", "id": "6"},
    {
        "type": "tool",
        "content": "42",
        "tool_call_id": "c1",
        "status": "error",
        "artifact": {"a": [1]},
        "response_metadata": {"x": 1},
    },
    {
        "role": "assistant",
        "content": "",
        "id": "7",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1.5}'}}
        ],
    },
    {
        "type": "ai",
        "content": "",
        "id": "8",
        "response_metadata": {"finish_reason": "tool_calls"},
        "tool_calls": [{"name": "f", "args": {"q": "x"}, "id": "c2", "type": "tool_call"}],
    },
]


def _general(item: Any) -> Any:
    try:
        return dump_message(_convert(copy.deepcopy(item), "m"))
    except InvalidMessage as exc:
        return ("refused", exc.lc_error)


def test_the_fast_path_takes_the_common_shapes() -> None:
    assert all(fast_message(copy.deepcopy(item)) is not None for item in COMMON)


def test_the_fast_path_builds_exactly_what_the_general_path_builds() -> None:
    rng = random.Random(5)
    items: list[Any] = [item for _, item in corpus(11, 20_000)]
    for base in COMMON:  # every common shape with one key dropped or one value swapped
        for key in base:
            items.append({k: v for k, v in base.items() if k != key})
            for value in (None, "", 0, 1, [], {}, "x", ["a", 1], {"example": True}):
                items.append({**base, key: value})
    rng.shuffle(items)
    taken = 0
    for item in items:
        if type(item) is not dict:
            continue
        fast = fast_message(copy.deepcopy(item))
        if fast is None:
            continue
        taken += 1
        assert dump_message(fast) == _general(item), item
    assert taken > 500  # the corpus really exercises the fast path


def test_fast_built_messages_never_share_their_dicts() -> None:
    a = fast_message({"role": "user", "content": "a"})
    b = fast_message({"role": "tool", "content": "b", "tool_call_id": "c"})
    c = fast_message(
        {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "args": {}, "id": "1"}]}
    )
    assert a is not None and b is not None and c is not None
    dicts = [m.additional_kwargs for m in (a, b, c)] + [m.response_metadata for m in (a, b, c)]
    assert len({id(d) for d in dicts}) == len(dicts)
