"""Every golden case of the real LangGraph, through both reducers and all four views."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import compact_all, golden_cases, golden_ids
from threadfold.core import InvalidMessage, ReducerError, add_messages, apply_deltas

CASES = golden_cases()
IDS = [f"{i}-{c['name']}" for i, c in enumerate(CASES, 1)]


def _outcome(run: Any) -> dict[str, Any]:
    try:
        messages = run()
    except InvalidMessage as exc:
        return {"ok": False, "error_type": exc.lc_error}
    except ReducerError:
        return {"ok": False, "error_type": "ValueError"}
    return {"ok": True, "messages": compact_all(messages)}


def _expect(view: dict[str, Any]) -> dict[str, Any]:
    if view["ok"]:
        return {"ok": True, "messages": view["messages"]}
    return {"ok": False, "error_type": view["error_type"]}


def _concat(batches: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for batch in batches:
        flat.extend(batch) if isinstance(batch, list) else flat.append(batch)
    return flat


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_apply_deltas_in_one_call_matches_langgraph(case: dict[str, Any]) -> None:
    state, batches = case["input"]["state"], case["input"]["batches"]
    got = _outcome(lambda: apply_deltas(state, batches))
    assert got == _expect(case["expected"]["delta_reducer"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_apply_deltas_folded_per_batch_matches_langgraph(case: dict[str, Any]) -> None:
    def run() -> Any:
        current: Any = case["input"]["state"]
        for batch in case["input"]["batches"]:
            current = apply_deltas(current, [batch])
        return current

    assert _outcome(run) == _expect(case["expected"]["delta_reducer_per_batch"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_add_messages_folded_per_batch_matches_langgraph(case: dict[str, Any]) -> None:
    fmt = case["input"].get("format")
    new_id = golden_ids()

    def run() -> Any:
        current: Any = case["input"]["state"]
        for batch in case["input"]["batches"]:
            current = add_messages(current, batch, format=fmt, new_id=new_id)
        return current

    assert _outcome(run) == _expect(case["expected"]["add_messages"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_add_messages_in_one_call_matches_langgraph(case: dict[str, Any]) -> None:
    fmt = case["input"].get("format")
    state, batches = case["input"]["state"], case["input"]["batches"]
    got = _outcome(lambda: add_messages(state, _concat(batches), format=fmt, new_id=golden_ids()))
    assert got == _expect(case["expected"]["add_messages_one_call"])


REDUCER_ERRORS = [
    c
    for c in CASES
    if not c["expected"]["add_messages"]["ok"]
    and "Attempting to delete" in c["expected"]["add_messages"]["error"]
]


def test_golden_file_has_reducer_error_cases() -> None:
    assert len(REDUCER_ERRORS) >= 3


@pytest.mark.parametrize("case", REDUCER_ERRORS, ids=[c["name"] for c in REDUCER_ERRORS])
def test_unknown_remove_error_text_is_langgraphs_word_for_word(case: dict[str, Any]) -> None:
    view = case["expected"]["add_messages"]
    fmt = case["input"].get("format")
    with pytest.raises(ReducerError) as caught:
        current: Any = case["input"]["state"]
        for batch in case["input"]["batches"]:
            current = add_messages(current, batch, format=fmt, new_id=golden_ids())
    assert str(caught.value) == view["error"]
