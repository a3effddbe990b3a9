"""Context windows through every kind of client over the real stack: the window equals
LangChain's ``trim_messages`` of the thread's state where that is valid, is repaired
where it is not, reads at a version and in either format, and each kind refuses the
same arguments naming the same field."""

from __future__ import annotations

from typing import Any, Final

import pytest
from langchain_core.messages import BaseMessage, messages_from_dict, trim_messages

from tests.client.kinds import new_thread
from threadfold import ClientProtocol, NotFound
from threadfold.errors import BadRequest

WAIT = 20.0
APPROXIMATE: Final = "approximate"  # LangChain's count_tokens_approximately, by name

# A system prompt, then turns with a tool call between them: every window LangChain
# cuts inside the tool group starts with an orphaned ToolMessage.
THREAD: list[Any] = [
    {"role": "system", "content": "You answer in one line.", "id": "s"},
    {"role": "user", "content": "What is the weather in Paris and in Rome?", "id": "h1"},
    {
        "role": "assistant",
        "content": "",
        "id": "a1",
        "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Rome"}'}},
        ],
    },
    {"role": "tool", "content": "Paris: 18 C, light rain all afternoon", "tool_call_id": "c1",
     "id": "t1"},
    {"role": "tool", "content": "Rome: 24 C, clear skies", "tool_call_id": "c2", "id": "t2"},
    {"role": "assistant", "content": "Paris 18 C and rainy; Rome 24 C and clear.", "id": "a2"},
    {"role": "user", "content": "Thanks!", "id": "h2"},
]


def _loaded(messages: list[dict[str, Any]]) -> list[BaseMessage]:
    """The state's messages (LangChain's model_dump form) as LangChain loads them."""
    return messages_from_dict([{"type": m["type"], "data": m} for m in messages])


def _ids(messages: list[Any]) -> list[str]:
    return [m["id"] if isinstance(m, dict) else m.id for m in messages]


def _written(client: ClientProtocol) -> tuple[str, str]:
    thread = new_thread()
    done = client.append(thread, THREAD)
    client.wait_for(thread, done.version, WAIT)
    return thread, done.version


@pytest.mark.parametrize(
    "trim",
    [
        {},
        {"include_system": True},
        {"include_system": True, "start_on": "human"},
        {"end_on": ["ai", "tool"]},
        {"strategy": "first"},
        {"strategy": "first", "end_on": "ai"},
    ],
)
def test_a_window_is_langchains_where_that_is_valid_and_repaired_where_not(
    client: ClientProtocol, trim: dict[str, Any]
) -> None:
    thread, version = _written(client)
    lc = _loaded(client.state(thread).messages)
    total = client.context(thread, 10**6).tokens
    seen_adjusted = False
    for budget in range(1, total + 2):
        got = client.context(thread, budget, **trim)
        theirs = trim_messages(lc, max_tokens=budget, token_counter=APPROXIMATE, **trim)
        assert got.version == version and got.total == len(THREAD)
        assert got.max_tokens == budget and got.counter == "approximate"
        if got.adjusted is None:
            assert _ids(got.messages) == _ids(theirs), budget
            assert got.messages == [m for m in client.state(thread).messages
                                    if m["id"] in set(_ids(theirs))]
        else:
            seen_adjusted = True
            assert got.adjusted == "tool_pairs"
            kept = set(_ids(got.messages))
            assert kept < set(_ids(theirs))  # LangChain's, less the broken group
            assert not ({"t1", "t2"} & kept) or "a1" in kept
            assert ("a1" in kept) == ({"t1", "t2"} <= kept)
        assert got.tokens <= budget or _ids(got.messages) == ["s"]
    if trim in ({}, {"include_system": True}, {"strategy": "first"}):
        assert seen_adjusted  # some budget cut the tool group: LangChain breaks a pair


def test_the_cut_langchain_gets_wrong_is_repaired(client: ClientProtocol) -> None:
    # langchain-ai/langchain#33245: a window that starts with a ToolMessage.
    thread, _ = _written(client)
    lc = _loaded(client.state(thread).messages)
    whole = client.context(thread, 10**6)
    assert client.context(thread, 10**6, strategy="first").tokens == whole.tokens
    # The budget that takes t2 and what follows it, but not t1.
    budget = next(
        b for b in range(1, whole.tokens)
        if _ids(trim_messages(lc, max_tokens=b, token_counter=APPROXIMATE))[:1] == ["t2"]
    )
    theirs = trim_messages(lc, max_tokens=budget, token_counter=APPROXIMATE)
    assert theirs[0].type == "tool"
    got = client.context(thread, budget)
    assert got.adjusted == "tool_pairs"
    assert _ids(got.messages) == _ids(theirs)[1:] == ["a2", "h2"]


def test_a_window_waits_for_a_version_reads_at_one_and_comes_in_openai_form(
    client: ClientProtocol,
) -> None:
    thread, _ = _written(client)
    later = client.append(thread, [{"role": "user", "content": "And tomorrow?", "id": "h3"}])
    now = client.context(thread, 60, min_version=later.version, wait=WAIT)
    assert now.messages[-1]["id"] == "h3" and now.version == later.version
    # The stack keeps no applied entries (retention 0): the live version is the one
    # time travel serves (earlier ones: tests/api/test_context_http.py).
    at = client.context(thread, 60, at_version=later.version)
    assert at == now
    openai = client.context(thread, 60, format="openai")
    assert openai.format == "openai" and openai.tokens == now.tokens
    assert [m["role"] for m in openai.messages] == [
        {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}[m["type"]]
        for m in now.messages
    ]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_tokens": 10**9}, "max_tokens"),
        ({"max_tokens": 1.5}, "max_tokens"),
        ({"max_tokens": 100, "strategy": "middle"}, "strategy"),
        ({"max_tokens": 100, "counter": "tiktoken"}, "counter"),
        ({"max_tokens": 100, "start_on": "person"}, "start_on"),
        ({"max_tokens": 100, "end_on": ["ai", "robot"]}, "end_on"),
        ({"max_tokens": 100, "strategy": "first", "include_system": True}, "include_system"),
        ({"max_tokens": 100, "strategy": "first", "start_on": "human"}, "start_on"),
        ({"max_tokens": 100, "format": "xml"}, "format"),
        ({"max_tokens": 100, "at_version": "yesterday"}, "at_version"),
    ],
)
def test_bad_arguments_are_refused_naming_the_field(
    client: ClientProtocol, kwargs: dict[str, Any], field: str
) -> None:
    thread, _ = _written(client)
    rest = dict(kwargs)
    budget = rest.pop("max_tokens")
    with pytest.raises(BadRequest) as caught:
        client.context(thread, budget, **rest)
    assert caught.value.field == field and caught.value.message.startswith(field)


def test_a_thread_never_written_has_no_window(client: ClientProtocol) -> None:
    with pytest.raises(NotFound):
        client.context(new_thread(), 100)
