"""The reducers' edges, as tables: ids, arity, formats, the incremental effect."""

from __future__ import annotations

import uuid

import pytest

from tests.support import compact_all, golden_ids
from threadfold.core import (
    AIMessage,
    HumanMessage,
    InvalidMessage,
    Messages,
    ReducerError,
    RemoveMessage,
    ThreadFold,
    add_messages,
    apply_deltas,
    ensure_ids,
)


def test_add_messages_without_arguments_returns_a_configured_reducer() -> None:
    reducer = add_messages(new_id=golden_ids())
    assert compact_all(reducer([], [{"role": "user", "content": "x"}])) == [
        {"type": "human", "content": "x", "id": "00000000-0000-4000-8000-000000000001"}
    ]


@pytest.mark.parametrize(
    ("left", "right", "side"), [([1], None, "left"), (None, [1], "right"), ([], None, "right")]
)
def test_add_messages_with_one_side_missing_names_it(
    left: object, right: object, side: str
) -> None:
    with pytest.raises(ReducerError, match=f"Only received: '{side}'"):
        add_messages(left, right)


def test_add_messages_rejects_an_unknown_format() -> None:
    with pytest.raises(ReducerError, match="Unrecognized format='x'"):
        add_messages([], [HumanMessage(content="a", id="1")], format="x")


def test_add_messages_stamps_uuid4_ids_and_one_id_per_object() -> None:
    same = HumanMessage(content="twice")
    merged = add_messages([HumanMessage(content="left")], [same, same])
    assert len(merged) == 2
    assert all(uuid.UUID(str(m.id)).version == 4 for m in merged)


def test_add_messages_returns_a_new_list_and_leaves_frozen_inputs_alone() -> None:
    left = [HumanMessage(content="a")]
    result = add_messages(left, [])
    assert result is not left
    assert left[0].id is None


def test_ensure_ids_stamps_missing_and_empty_ids_of_message_likes_only() -> None:
    stamped = ensure_ids(
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b", "id": ""},
            HumanMessage(content="c", id=""),
            HumanMessage(content="d"),
            "e",
            ("ai", "f"),
            {"role": "user", "content": "g", "id": "keep"},
        ],
        new_id=golden_ids(),
    )
    assert [m.id for m in stamped] == [
        "00000000-0000-4000-8000-000000000001",
        "00000000-0000-4000-8000-000000000002",
        "",
        "00000000-0000-4000-8000-000000000003",
        "00000000-0000-4000-8000-000000000004",
        "00000000-0000-4000-8000-000000000005",
        "keep",
    ]


def test_ensure_ids_names_the_bad_item() -> None:
    with pytest.raises(InvalidMessage, match=r"^messages\[1\]\.tool_call_id: tool message needs"):
        ensure_ids([{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}])


def test_apply_deltas_result_forgets_its_index_when_edited() -> None:
    result = apply_deltas([], [[HumanMessage(content="a", id="1")]])
    assert isinstance(result, Messages)
    assert result.index_copy() is not None
    result[0] = AIMessage(content="b", id="2")
    assert result.index_copy() is None
    again = apply_deltas(result, [[AIMessage(content="c", id="2")]])
    assert compact_all(again) == [{"type": "ai", "content": "c", "id": "2"}]


def test_apply_deltas_refuses_a_none_state() -> None:
    with pytest.raises(TypeError):
        apply_deltas(None, [])  # type: ignore[arg-type]


def test_apply_deltas_locates_a_bad_write() -> None:
    with pytest.raises(InvalidMessage, match=r"^writes\[2\]"):
        apply_deltas([], [["a", "b"], {"role": "tool", "content": "x"}])


def _rm(key: str) -> RemoveMessage:
    return RemoveMessage(content="", id=key)


EFFECT_TABLE = [
    ("append new", [HumanMessage(content="c", id="c")], False, {"c": 2}, set()),
    ("update keeps position", [AIMessage(content="a2", id="a")], False, {"a": 0}, set()),
    ("remove existing", [_rm("a")], False, {}, {"a"}),
    ("remove unknown is a no-op", [_rm("zz")], False, {}, set()),
    (
        "remove then re-add appends",
        [_rm("a"), HumanMessage(content="x", id="a")],
        False,
        {"a": 2},
        set(),
    ),
    (
        "add then remove leaves nothing to write",
        [HumanMessage(content="c", id="c"), _rm("c")],
        False,
        {},
        {"c"},
    ),
    (
        "remove all then add",
        [_rm("__remove_all__"), HumanMessage(content="d", id="d")],
        True,
        {"d": 2},
        set(),
    ),
]


@pytest.mark.parametrize(
    ("name", "batch", "cleared", "positions", "removed"),
    EFFECT_TABLE,
    ids=[row[0] for row in EFFECT_TABLE],
)
def test_thread_fold_reports_the_net_effect(
    name: str,
    batch: list[HumanMessage],
    cleared: bool,
    positions: dict[str, int],
    removed: set[str],
) -> None:
    fold = ThreadFold.from_messages(
        [HumanMessage(content="a", id="a"), HumanMessage(content="b", id="b")]
    )
    fold.apply(batch)
    effect = fold.take_effect()
    assert effect.cleared is cleared
    assert {k: p for k, (p, _) in effect.upserts.items()} == positions
    assert effect.removed == removed
    assert fold.take_effect().is_empty()


def test_thread_fold_refuses_id_less_messages() -> None:
    with pytest.raises(ValueError, match="needs message ids"):
        ThreadFold().apply([HumanMessage(content="x")])
