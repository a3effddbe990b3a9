"""One object, one id: id stamping with repeated objects vs the real LangGraph 1.2.24.

LangGraph stamps a message object's id in place, so when the same id-less object comes
twice the second occurrence already carries the first one's id; every occurrence of a
dict, a pair or a string is converted to a message of its own, and so (in
``add_messages``) is every occurrence of a chunk. Each case here builds the same
structure of repeated objects twice (LangGraph mutates its copy) and runs both sides
with the same patched ``uuid.uuid4``, so the outputs must agree to the id: which
positions share an id, and the order in which ids were drawn.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest
from langchain_core import messages as lc
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from langgraph.graph.message import add_messages as lg_add_messages
from langgraph.pregel import _messages as lg_pregel_messages
from langgraph.pregel._messages import ensure_message_ids

from tests.differential.lc import deterministic_uuid4
from threadfold.core import add_messages, apply_deltas, dump_messages, ensure_ids

pytestmark = pytest.mark.differential

CASES = 3_000

# Message-likes of every form, with and without ids: each call builds a new object.
FORMS: list[Callable[[], Any]] = [
    lambda: lc.HumanMessage(content="h"),
    lambda: lc.AIMessage(content="a"),
    lambda: lc.ToolMessage(content="t", tool_call_id="c1"),
    lambda: lc.HumanMessage(content="e", id=""),  # an object's empty id is an id
    lambda: lc.AIMessage(content="k", id="known"),
    lambda: lc.AIMessageChunk(content="c"),
    lambda: lc.HumanMessageChunk(content="hc", id=""),
    lambda: {"role": "user", "content": "d"},
    lambda: {"type": "ai", "content": "d2", "id": ""},  # a dict's empty id is missing
    lambda: {"role": "assistant", "content": "d3", "id": "known"},
    lambda: ("assistant", "p"),
    lambda: "s",
]


def _recipe(rng: random.Random) -> tuple[list[int], list[int], list[int]]:
    """Which forms make the pool, and the left and right lists as pool positions
    (drawn from a small pool, so objects repeat within and across the two lists)."""
    pool = [rng.randrange(len(FORMS)) for _ in range(rng.randint(1, 4))]
    left = [rng.randrange(len(pool)) for _ in range(rng.randrange(0, 5))]
    right = [rng.randrange(len(pool)) for _ in range(rng.randint(1, 6))]
    return pool, left, right


def _build(recipe: tuple[list[int], list[int], list[int]]) -> tuple[list[Any], list[Any]]:
    pool_forms, left, right = recipe
    pool = [FORMS[k]() for k in pool_forms]
    return [pool[i] for i in left], [pool[i] for i in right]


@contextmanager
def _same_ids() -> Iterator[None]:
    """Both sides draw 00000000-0000-4000-8000-000000000001, ...2, ... in draw order.

    ``ensure_message_ids`` calls the ``uuid4`` its module imported, so that name is
    patched too (to the same patched function).
    """
    with deterministic_uuid4(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(lg_pregel_messages, "uuid4", uuid.uuid4)
        yield


def _dumps(messages: Any) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def _mismatches(check: Callable[[Any], tuple[Any, Any]]) -> list[Any]:
    rng = random.Random(20261208)
    bad = []
    for _ in range(CASES):
        recipe = _recipe(rng)
        ours, theirs = check(recipe)
        if ours != theirs:
            bad.append((recipe, ours, theirs))
    return bad


def test_add_messages_stamps_repeated_objects_as_langgraph_does() -> None:
    def check(recipe: Any) -> tuple[Any, Any]:
        left, right = _build(recipe)
        with _same_ids():
            ours = dump_messages(add_messages(left, right))
        left, right = _build(recipe)
        with _same_ids():
            theirs = _dumps(lg_add_messages(left, right))
        return ours, theirs

    bad = _mismatches(check)
    assert not bad, f"{len(bad)} of {CASES} differ; first: {bad[:2]}"


def test_ensure_ids_then_apply_deltas_is_ensure_message_ids_then_the_delta_reducer() -> None:
    """One write (a delta) holding repeated objects, folded onto a state that knows
    ``known``. (Across deltas the same object gets a new id each time: LangGraph's
    in-place stamp carries over, a frozen message cannot; docs/semantics.md.)"""
    channels: dict[str, Any] = {"messages": DeltaChannel(cast(Any, _messages_delta_reducer))}
    base: Any = [{"type": "human", "content": "s", "id": "known"}]

    def check(recipe: Any) -> tuple[Any, Any]:
        _, write = _build(recipe)
        with _same_ids():
            ours = dump_messages(apply_deltas(base, [ensure_ids(write)]))
        _, write = _build(recipe)
        with _same_ids():
            writes: list[tuple[str, Any]] = [("messages", write)]
            ensure_message_ids(channels, writes)
            theirs = _dumps(_messages_delta_reducer(base, [writes[0][1]]))
        return ours, theirs

    bad = _mismatches(check)
    assert not bad, f"{len(bad)} of {CASES} differ; first: {bad[:2]}"


def test_the_recipes_repeat_objects_within_and_across_lists() -> None:
    """The generator must make the cases the tests are about."""
    rng = random.Random(20261208)
    within = across = 0
    for _ in range(CASES):
        _, left, right = _recipe(rng)
        within += len(set(right)) < len(right)
        across += bool(set(left) & set(right))
    assert within > CASES // 3 and across > CASES // 4
