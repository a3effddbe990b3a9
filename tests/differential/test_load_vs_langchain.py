"""``load_message`` loads a message's dump as LangChain's ``messages_from_dict`` does:
for every message LangChain builds from the random corpus, its ``model_dump()`` (and the
form the HTTP clients send of it, defaults left out) loaded by us dumps as LangChain's
load of the same dump. The checkpoint route relies on it: an AI message's
``usage_metadata`` or ``invalid_tool_calls`` stay fields over HTTP."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest
from langchain_core import messages as lc

from tests.differential.message_corpus import corpus
from tests.differential.test_convert_vs_langchain import canonical
from threadfold.core import dump_messages
from threadfold.core.convert import load_message
from threadfold.wire import message_json

pytestmark = pytest.mark.differential


def _built(item: Any) -> lc.BaseMessage | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            built: lc.BaseMessage = lc.convert_to_messages([copy.deepcopy(item)])[0]
        except Exception:  # only what LangChain accepts
            return None
        return built


def test_a_dump_loads_as_langchain_loads_it() -> None:
    checked, problems = 0, []
    for _, item in corpus(424242, 3_000):
        if not isinstance(item, dict) or (built := _built(item)) is None:
            continue
        for form in (built.model_dump(), message_json(built)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = lc.messages_from_dict([{"type": form["type"], "data": form}])[0]
            got = dump_messages([load_message(copy.deepcopy(form))])[0]
            if canonical(got) != canonical(want.model_dump()):
                problems.append(f"{form!r}: {got!r} != {want.model_dump()!r}")
            checked += 1
    assert checked > 1_000
    assert not problems, problems[:3]


def test_usage_and_unparsed_calls_stay_fields() -> None:
    msg = lc.AIMessage(
        "x", id="a", usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        invalid_tool_calls=[{"name": "f", "args": "{", "id": "c", "error": "bad",
                             "type": "invalid_tool_call"}],
    )
    got = dump_messages([load_message(message_json(msg))])[0]
    assert got["usage_metadata"] == msg.usage_metadata
    assert got["invalid_tool_calls"] == msg.invalid_tool_calls
    assert got["additional_kwargs"] == {}
