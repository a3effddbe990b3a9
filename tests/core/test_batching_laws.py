"""Hypothesis: the delta fold is batching-invariant; add_messages is not."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from tests.support import compact_all
from threadfold.core import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ReducerError,
    RemoveMessage,
    ThreadFold,
    add_messages,
    apply_deltas,
)

IDS = ["a", "b", "c", "d", "e"]

ids = st.sampled_from(IDS)
contents = st.sampled_from(["x", "y", "z", ""])
appends = st.builds(lambda i, c: HumanMessage(content=c, id=i), ids, contents)
updates = st.builds(lambda i, c: AIMessage(content=c, id=i), ids, contents)
chunks = st.builds(lambda i, c: AIMessageChunk(content=c, id=i), ids, contents)
removes = st.builds(lambda i: RemoveMessage(content="", id=i), st.sampled_from([*IDS, "zz"]))
remove_all = st.just(RemoveMessage(content="", id=REMOVE_ALL_MESSAGES))
idless = st.builds(lambda c: HumanMessage(content=c), contents)

with_ids = st.one_of(appends, updates, removes, remove_all, chunks)
anything = st.one_of(with_ids, idless)
states = st.lists(
    st.builds(lambda i, c: HumanMessage(content=c, id=i), ids, contents),
    max_size=5,
    unique_by=lambda m: m.id,
)


def _splits(n: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, n), max_size=4).map(sorted)


def _batches(msgs: list[BaseMessage], cuts: list[int]) -> list[list[BaseMessage]]:
    bounds = [0, *cuts, len(msgs)]
    return [msgs[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
@given(states, st.lists(anything, max_size=20), st.data())
def test_apply_deltas_gives_the_same_state_for_every_split(
    state: list[BaseMessage], msgs: list[BaseMessage], data: st.DataObject
) -> None:
    whole = apply_deltas(state, [msgs])
    current: Any = state
    for batch in _batches(msgs, data.draw(_splits(len(msgs)))):
        current = apply_deltas(current, [batch])
    assert compact_all(current) == compact_all(whole)


@settings(max_examples=1000)
@given(states, st.lists(anything, max_size=20), st.data())
def test_apply_deltas_on_a_plain_list_equals_on_its_own_result(
    state: list[BaseMessage], msgs: list[BaseMessage], data: st.DataObject
) -> None:
    """The remembered index is an optimisation only: a plain copy folds the same."""
    cut = data.draw(st.integers(0, len(msgs)))
    first = apply_deltas(state, [msgs[:cut]])
    assert compact_all(apply_deltas(first, [msgs[cut:]])) == compact_all(
        apply_deltas(list(first), [msgs[cut:]])
    )


@settings(max_examples=2000)
@given(states, st.lists(with_ids, max_size=25), st.data())
def test_thread_fold_equals_apply_deltas_for_every_split(
    state: list[BaseMessage], msgs: list[BaseMessage], data: st.DataObject
) -> None:
    fold = ThreadFold.from_messages(state)
    for batch in _batches(msgs, data.draw(_splits(len(msgs)))):
        fold.apply(batch)
    assert compact_all(fold.ordered()) == compact_all(apply_deltas(state, [msgs]))


@settings(max_examples=2000)
@given(states, st.lists(with_ids, max_size=25), st.data())
def test_committing_each_effect_into_a_store_rebuilds_the_fold(
    state: list[BaseMessage], msgs: list[BaseMessage], data: st.DataObject
) -> None:
    """What the workers do: a store of id -> (position, message) updated by effects only."""
    fold = ThreadFold.from_messages(state)
    store = {m.id: (fold.positions[str(m.id)], m) for m in state}
    for batch in _batches(msgs, data.draw(_splits(len(msgs)))):
        fold.apply(batch)
        effect = fold.take_effect()
        if effect.cleared:
            store.clear()
        for key in effect.removed:
            store.pop(key, None)
        store.update(effect.upserts)
    ordered = [m for _, m in sorted(store.values(), key=lambda pm: pm[0])]
    assert compact_all(ordered) == compact_all(apply_deltas(state, [msgs]))


@settings(max_examples=1000)
@given(states, st.lists(with_ids, max_size=20), st.data())
def test_a_sparse_fold_produces_the_same_effect_as_a_full_one(
    state: list[BaseMessage], msgs: list[BaseMessage], data: st.DataObject
) -> None:
    """A worker seeds the fold with the positions of the batch's ids only."""
    full = ThreadFold.from_messages(state)
    mentioned = {m.id for m in msgs}
    sparse = ThreadFold(
        {k: p for k, p in full.positions.items() if k in mentioned}, full.next_position
    )
    full.apply(msgs)
    sparse.apply(msgs)
    assert full.take_effect() == sparse.take_effect()


def _add_invariant(
    example: tuple[Sequence[BaseMessage], Sequence[BaseMessage], Sequence[BaseMessage]],
) -> bool:
    state, xs, ys = example
    try:
        split = compact_all(add_messages(add_messages(list(state), list(xs)), list(ys)))
    except ReducerError:
        split = None
    try:
        whole = compact_all(add_messages(list(state), [*xs, *ys]))
    except ReducerError:
        whole = None
    return split == whole


def test_add_messages_is_not_batching_invariant_and_hypothesis_finds_why() -> None:
    pool = st.one_of(appends, updates, removes, remove_all)
    example = find(
        st.tuples(states, st.lists(pool, max_size=4), st.lists(pool, max_size=4)),
        lambda ex: not _add_invariant(ex),
        settings=settings(max_examples=5000, database=None),
    )
    assert not _add_invariant(example)
