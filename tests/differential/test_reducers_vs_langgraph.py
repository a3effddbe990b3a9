"""10,000+ random write sequences per reducer: threadfold vs the real LangGraph 1.2.24.

Every input form goes in (flat dicts, OpenAI role dicts, strings, [role, content] pairs,
chunk objects, removes of known and unknown ids, __remove_all__, id-less and empty ids,
single-message writes), and the results are compared in full flat form.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.graph.message import _messages_delta_reducer
from langgraph.graph.message import add_messages as lg_add_messages

from tests.differential.lc import deterministic_uuid4, lc_write
from tests.support import golden_ids
from threadfold.core import InvalidMessage, ReducerError, add_messages, apply_deltas, dump_messages

pytestmark = pytest.mark.differential

SEQUENCES = 10_000
POOL = ["1", "2", "3", "4", "5"]


def _message(rng: random.Random) -> Any:
    ident = rng.choice([*POOL, *POOL, None, ""])
    text = rng.choice(["a", "b", "", "long text " * 3])
    kind = rng.randrange(12)
    base: dict[str, Any] = {"content": text} if ident is None else {"content": text, "id": ident}
    if kind == 0:
        return text or "s"
    if kind == 1:
        return [rng.choice(["user", "ai", "assistant", "system"]), text]
    if kind == 2:
        return {"role": rng.choice(["user", "assistant", "developer"]), **base}
    if kind == 3:
        return {"type": "tool", "tool_call_id": "c1", **base}
    if kind == 4:
        return {"type": "remove", "id": rng.choice([*POOL, "9"]), "content": ""}
    if kind == 5:
        return {"type": "remove", "id": "__remove_all__", "content": ""}
    if kind == 6:
        return {"type": "AIMessageChunk", **base}
    if kind == 7:
        call = {"name": "f", "args": {"q": text}, "id": "c1"}
        return {"type": "ai", "tool_calls": [call], **base}
    return {"type": rng.choice(["human", "ai", "system"]), **base}


def _write(rng: random.Random) -> Any:
    if rng.random() < 0.15:
        single = _message(rng)
        return tuple(single) if isinstance(single, list) else single
    return [_message(rng) for _ in range(rng.randrange(0, 5))]


def _case(rng: random.Random) -> tuple[list[Any], list[Any]]:
    state = [{"type": "human", "content": "s", "id": i} for i in rng.sample(POOL, rng.randrange(4))]
    return state, [_write(rng) for _ in range(rng.randrange(1, 5))]


def _ours(run: Callable[[], Any]) -> Any:
    try:
        return ("ok", dump_messages(run()))
    except InvalidMessage as exc:
        return ("error", exc.lc_error)
    except ReducerError as exc:
        return ("error", "ValueError", str(exc))


def _theirs(run: Callable[[], Any]) -> Any:
    try:
        return ("ok", [m.model_dump() for m in run()])
    except Exception as exc:  # the class (and LangGraph's own text) is compared
        return ("error", type(exc).__name__, str(exc))


def _normalise_error(result: Any) -> Any:
    # LangChain's coercion ValueErrors carry their own text; ours is user-facing.
    # The class is compared always; the text only for LangGraph's own reducer errors.
    if result[0] == "error" and not (len(result) == 3 and "Attempting" in result[2]):
        return result[:2]
    return result


def _mismatches(check: Callable[[random.Random], tuple[Any, Any, Any]]) -> list[Any]:
    rng = random.Random(20261130)
    bad = []
    for _ in range(SEQUENCES):
        case, ours, theirs = check(rng)
        if _normalise_error(ours) != _normalise_error(theirs):
            bad.append((case, ours, theirs))
    return bad


def test_apply_deltas_matches_the_delta_reducer_in_one_call_and_per_batch() -> None:
    def check(rng: random.Random) -> tuple[Any, Any, Any]:
        state, writes = _case(rng)
        per_batch = rng.random() < 0.5

        def ours() -> Any:
            if not per_batch:
                return apply_deltas(state, writes)
            current: Any = state
            for w in writes:
                current = apply_deltas(current, [w])
            return current

        def theirs() -> Any:
            if not per_batch:
                return _messages_delta_reducer(state, [lc_write(w) for w in writes])
            current: Any = state
            for w in writes:
                current = _messages_delta_reducer(current, [lc_write(w)])
            return current

        return (state, writes, per_batch), _ours(ours), _theirs(theirs)

    bad = _mismatches(check)
    assert not bad, f"{len(bad)} of {SEQUENCES} differ; first: {bad[:3]}"


def test_add_messages_matches_langgraph_folded_per_write() -> None:
    def check(rng: random.Random) -> tuple[Any, Any, Any]:
        state, writes = _case(rng)
        new_id = golden_ids()

        def ours() -> Any:
            current: Any = state
            for w in writes:
                current = add_messages(current, w, new_id=new_id)
            return current

        def theirs() -> Any:
            with deterministic_uuid4():
                current: Any = state
                for w in writes:
                    current = lg_add_messages(current, lc_write(w))
                return current

        return (state, writes), _ours(ours), _theirs(theirs)

    bad = _mismatches(check)
    assert not bad, f"{len(bad)} of {SEQUENCES} differ; first: {bad[:3]}"
