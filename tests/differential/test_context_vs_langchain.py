"""``threadfold.core.context`` against the real langchain-core 1.8.3.

* **Counting.** ``approximate(m)`` is ``count_tokens_approximately([m])`` for every
  message of the seeded corpus both sides build, and for generated LangChain messages
  of every class (chunks too): string and list content (text, image, image_url, other
  and typeless dict blocks, plain strings), names, tool calls (not counted by LangChain
  under a list content), tool call ids, developer system messages, chat roles. A list's
  count is the sum of its messages' counts.
* **Trimming.** For generated threads (tool groups whole, cut, answered late or never,
  orphaned answers, chunks, multimodal content) and generated ``trim_messages``
  arguments, :func:`trimmed` keeps exactly LangChain's messages, valid or not. The
  window is LangChain's answer whenever :func:`repaired` leaves that unchanged, and
  otherwise a subsequence of it with no broken tool pair, marked ``tool_pairs``.
* **Partial reads.** A read of the thread's last messages (and its first) or of its
  first ones gives the whole thread's window, or asks for more exactly when it holds
  too little to decide.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core import messages as lc
from langchain_core.messages import BaseMessage as LcMessage
from langchain_core.messages.utils import count_tokens_approximately, trim_messages

from tests.differential.lc import lc_from_ours
from tests.differential.test_convert_vs_langchain import full_corpus
from threadfold.core import InvalidMessage, dump_messages, to_messages
from threadfold.core.context import (
    MESSAGE_TYPES,
    NeedMore,
    Sized,
    Span,
    Strategy,
    Trim,
    approximate,
    repaired,
    sized,
    trimmed,
    window,
)
from threadfold.core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

pytestmark = pytest.mark.differential

#: Every example's Hypothesis budget: the whole file stays far below a minute on two
#: slow cores (LangChain counts each prefix its binary search tries, message by message).
#: trim_messages' own counter, by name.
APPROXIMATE: Final = "approximate"

SETTINGS: Final = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
#: The trim against trim_messages: cheap, and the heart of the file.
MAIN: Final = settings(SETTINGS, max_examples=1000)
#: Lists of up to 8 generated messages: the dearest to draw.
FEWER: Final = settings(SETTINGS, max_examples=200)


def _quiet(make: Callable[[], Any]) -> Any:
    """LangChain warns on a few constructions (pytest makes warnings errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def _count(messages: Sequence[LcMessage]) -> int:
    return int(_quiet(lambda: count_tokens_approximately(list(messages))))


def _ours(message: LcMessage) -> BaseMessage:
    [converted] = to_messages([message])
    return converted


# -- generated LangChain messages ---------------------------------------------------------

_TEXT: Final = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
_WORD: Final = st.text("abxyz_-é✓ ", max_size=8)
_NAME: Final = st.one_of(st.none(), st.just(""), _WORD, st.sampled_from(["bob", "get_weather"]))
_SCALAR: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**9), 10**9),
    st.floats(allow_nan=False, allow_infinity=False),
    _WORD,
)
_JSON: Final = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_WORD, inner, max_size=3),
    max_leaves=6,
)
_ARGS: Final = st.dictionaries(_WORD, _JSON, max_size=3)

_TEXT_BLOCK: Final = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _TEXT),
    st.builds(lambda t: {"type": "text", "text": t, "index": 0, "id": "b1"}, _TEXT),
    st.just({"type": "text"}),  # no text: LangChain counts ""
)
_IMAGE_BLOCK: Final = st.sampled_from(
    [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 400}},
        {"type": "image", "url": "https://example.com/y.png"},
        {"type": "image", "source_type": "base64", "data": "AAAA", "mime_type": "image/png"},
    ]
)
_OTHER_BLOCK: Final = st.one_of(
    st.builds(lambda t: {"type": "reasoning", "reasoning": t}, _TEXT),
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, _TEXT),
    st.builds(lambda a: {"type": "tool_use", "id": "tu1", "name": "f", "input": a}, _ARGS),
    st.builds(lambda a: {"type": "tool_call", "id": "tc1", "name": "f", "args": a}, _ARGS),
    st.builds(lambda v: {"foo": v}, _JSON),  # no type at all
    st.just({"type": "file", "url": "https://example.com/a.pdf"}),
)
_BLOCK: Final = st.one_of(_TEXT_BLOCK, _IMAGE_BLOCK, _OTHER_BLOCK, _TEXT)
_LIST: Final = st.lists(_BLOCK, max_size=4)
_CONTENT: Final = st.one_of(_TEXT, _LIST)

_CALL_ID: Final = st.one_of(_WORD, st.sampled_from(["call_1", "c2", "toolu_01"]))


def _tool_call(name: str, args: dict[str, Any], call_id: str | None) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


_TOOL_CALL: Final = st.builds(
    _tool_call, st.sampled_from(["f", "get_weather", ""]), _ARGS, st.one_of(st.none(), _CALL_ID)
)
_INVALID_CALL: Final = st.builds(
    lambda a: {"name": "f", "args": a, "id": "bad", "error": None, "type": "invalid_tool_call"},
    st.sampled_from(['{"a": ', "", "[1]"]),
)
_CHUNK_ARGS: Final = st.one_of(
    _ARGS.map(json.dumps), st.sampled_from(['{"city": "Pa', "", "[1]", '{"a": [1, 2'])
)
_CALL_CHUNK: Final = st.builds(
    lambda name, args, call_id, index: {
        "name": name,
        "args": args,
        "id": call_id,
        "index": index,
        "type": "tool_call_chunk",
    },
    st.one_of(st.none(), st.just("f")),
    st.one_of(st.none(), _CHUNK_ARGS),
    st.one_of(st.none(), _CALL_ID),
    st.one_of(st.none(), st.integers(0, 2)),
)
_USAGE: Final = st.one_of(
    st.none(), st.just({"input_tokens": 10, "output_tokens": 20, "total_tokens": 30})
)


_KINDS: Final = (
    "human",
    "system",
    "developer",
    "ai",
    "ai_calls",
    "ai_list_calls",
    "tool",
    "chat",
    "function",
    "HumanMessageChunk",
    "SystemMessageChunk",
    "AIMessageChunk",
    "AIMessageChunk_calls",
    "ToolMessageChunk",
    "FunctionMessageChunk",
    "ChatMessageChunk",
)


def _class_fields(draw: st.DrawFn, kind: str) -> tuple[type[LcMessage], dict[str, Any]]:
    """The class of a ``kind`` of message and the fields of its own."""
    fields: dict[str, Any]
    if kind in ("human", "HumanMessageChunk"):
        return (lc.HumanMessage if kind == "human" else lc.HumanMessageChunk), {}
    if kind in ("system", "developer", "SystemMessageChunk"):
        developer = kind == "developer" or (kind == "SystemMessageChunk" and draw(st.booleans()))
        fields = {"additional_kwargs": {"__openai_role__": "developer"}} if developer else {}
        return (lc.SystemMessageChunk if kind == "SystemMessageChunk" else lc.SystemMessage), fields
    if kind in ("ai", "ai_calls", "ai_list_calls"):
        fields = {
            "tool_calls": []
            if kind == "ai"
            else draw(st.lists(_TOOL_CALL, min_size=1, max_size=3)),
            "invalid_tool_calls": draw(st.lists(_INVALID_CALL, max_size=1)),
            "usage_metadata": draw(_USAGE),
        }
        if kind == "ai_list_calls":  # LangChain does not count these calls
            fields["content"] = draw(_LIST)
        return lc.AIMessage, fields
    if kind in ("AIMessageChunk", "AIMessageChunk_calls"):
        fields = {}
        if kind == "AIMessageChunk_calls" and draw(st.booleans()):
            fields["tool_call_chunks"] = draw(st.lists(_CALL_CHUNK, min_size=1, max_size=3))
        elif kind == "AIMessageChunk_calls":
            fields["tool_calls"] = draw(st.lists(_TOOL_CALL, min_size=1, max_size=3))
        if draw(st.booleans()):
            fields["chunk_position"] = "last"
        return lc.AIMessageChunk, fields
    if kind in ("tool", "ToolMessageChunk"):
        fields = {
            "tool_call_id": draw(_CALL_ID),
            "status": draw(st.sampled_from(["success", "error"])),
            "artifact": draw(st.one_of(st.none(), _JSON)),
        }
        return (lc.ToolMessage if kind == "tool" else lc.ToolMessageChunk), fields
    if kind in ("chat", "ChatMessageChunk"):
        role = draw(st.one_of(_WORD, st.sampled_from(["critic", "assistant", "user"])))
        return (lc.ChatMessage if kind == "chat" else lc.ChatMessageChunk), {"role": role}
    name = draw(st.one_of(_WORD, st.just("get_weather")))  # required
    return (lc.FunctionMessage if kind == "function" else lc.FunctionMessageChunk), {"name": name}


@st.composite
def lc_messages(draw: st.DrawFn) -> LcMessage:
    """One LangChain message of any class, built by LangChain's own constructor."""
    fields: dict[str, Any] = {"content": draw(_CONTENT), "name": draw(_NAME)}
    if draw(st.booleans()):
        fields["id"] = draw(_WORD)
    if draw(st.integers(0, 5)) == 0:
        fields["additional_kwargs"] = {"foo": draw(_JSON)}
    if draw(st.integers(0, 5)) == 0:
        fields["response_metadata"] = {"model_provider": "openai"}
    cls, own = _class_fields(draw, draw(st.sampled_from(_KINDS)))
    fields.update(own)
    built: LcMessage = _quiet(lambda: cls(**fields))
    event(f"message: {type(built).__name__}")
    return built


# -- counting -----------------------------------------------------------------------------


def _corpus_message(item: Any) -> BaseMessage | None:
    try:
        [message] = _quiet(lambda: to_messages([item]))
    except InvalidMessage:
        return None
    return None if isinstance(message, RemoveMessage) else message


def _features(message: BaseMessage) -> set[str]:
    """What a corpus message exercises in the count (checked to stay reached)."""
    out = {type(message).__name__}
    if isinstance(message.content, list):
        out.add("list content")
        kinds = {b.get("type") if isinstance(b, dict) else "str" for b in message.content}
        out.update(f"block {k}" for k in kinds if k in ("text", "image_url", "str"))
        if isinstance(message, AIMessage) and message.tool_calls:
            out.add("list content with tool calls")
    elif isinstance(message, AIMessage) and message.tool_calls:
        out.add("string content with tool calls")
    if message.name:
        out.add("name")
    if message.additional_kwargs.get("__openai_role__") == "developer":
        out.add("developer")
    return out


def test_every_corpus_message_counts_as_count_tokens_approximately_counts_it() -> None:
    """The whole message corpus of the conversion tests, LangChain objects included."""
    reached: Counter[str] = Counter()
    checked = unstable = 0
    mismatches: list[str] = []
    for form, item in full_corpus():
        ours = _corpus_message(item)
        if ours is None:
            continue
        [dumped] = dump_messages([ours])
        try:
            theirs = _quiet(partial(lc_from_ours, dumped))
            expected = _count([theirs])
        except (ValueError, TypeError):  # LangChain builds or counts no such message
            continue
        if theirs.model_dump() != dumped:
            # An AIMessageChunk's tool calls are parsed again from its tool_call_chunks,
            # which hold its invalid calls too: LangChain has another message to count.
            unstable += 1
            continue
        if form == "langchain_object":  # the original object is counted the same
            assert _count([item]) == expected, item
        if approximate(ours) != expected:
            mismatches.append(f"{item!r}: ours {approximate(ours)}, langchain {expected}")
        reached.update(_features(ours))
        checked += 1
    assert not mismatches, "\n".join(mismatches[:20])
    assert checked > 3_000
    assert unstable < checked // 100
    wanted = {
        "HumanMessage",
        "AIMessage",
        "SystemMessage",
        "ToolMessage",
        "FunctionMessage",
        "AIMessageChunk",
        "list content",
        "block text",
        "block image_url",
        "block str",
        "list content with tool calls",
        "string content with tool calls",
        "name",
        "developer",
    }
    assert wanted <= set(reached), wanted - set(reached)


@SETTINGS
@given(lc_messages())
def test_a_generated_message_counts_as_count_tokens_approximately_counts_it(
    message: LcMessage,
) -> None:
    ours = _ours(message)
    assert ours.type == message.type
    expected = _count([message])
    assert approximate(ours) == expected
    # Back the other way: the LangChain message with exactly our fields counts the same
    # (unless LangChain reads it as another message: a chunk's tool_call_chunks again).
    [dumped] = dump_messages([ours])
    again = _quiet(lambda: lc_from_ours(dumped))
    if again.model_dump() == dumped:
        assert _count([again]) == expected
    else:
        event("LangChain reads our dump as another message")


@FEWER
@given(st.lists(lc_messages(), max_size=8))
def test_a_lists_count_is_the_sum_of_its_messages_counts(messages: list[LcMessage]) -> None:
    ours = to_messages(messages)
    assert _count(messages) == sum(approximate(m) for m in ours)
    assert sum(s.tokens for s in sized(ours)) == _count(messages)


@pytest.mark.parametrize(
    ("message", "tokens"),
    [
        # 4 + len("user") = 8 chars: 2 tokens, + 3
        (lc.HumanMessage("abcd"), 5),
        # a list content: text blocks' text, strings, other blocks' repr, 85 an image
        (lc.HumanMessage([{"type": "image_url", "image_url": {"url": "x" * 9000}}]), 85 + 1 + 3),
        (lc.HumanMessage([{"type": "text", "text": "ab"}, "cd", {"type": "x"}]), 6 + 3),
        # the tool calls' repr with a string content; not with a list content
        (
            lc.AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c"}]),
            -(-(len(repr([_tool_call("f", {}, "c")])) + 9) // 4) + 3,
        ),
        (lc.AIMessage([], tool_calls=[{"name": "f", "args": {}, "id": "c"}]), 3 + 3),
        # the call id and the role
        (lc.ToolMessage("", tool_call_id="call_1"), 3 + 3),
        (lc.SystemMessage("", additional_kwargs={"__openai_role__": "developer"}), 3 + 3),
        (lc.ChatMessage(content="", role="a" * 9), 3 + 3),
        (lc.FunctionMessage(content="", name="fn"), 3 + 3),
        (lc.AIMessageChunk(content="", name="n" * 7), 4 + 3),
    ],
    ids=[
        "human",
        "image",
        "blocks",
        "ai_calls",
        "ai_list_calls",
        "tool",
        "developer",
        "chat",
        "function",
        "chunk_name",
    ],
)
def test_known_counts(message: LcMessage, tokens: int) -> None:
    assert _count([message]) == tokens
    assert approximate(_ours(message)) == tokens


# -- threads ------------------------------------------------------------------------------

_SHORT_TEXT: Final = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=24)
_SHORT_CONTENT: Final = st.one_of(
    _SHORT_TEXT,
    st.lists(
        st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, _SHORT_TEXT),
            _IMAGE_BLOCK,
            st.builds(lambda t: {"type": "reasoning", "reasoning": t}, _SHORT_TEXT),
            _SHORT_TEXT,
        ),
        max_size=3,
    ),
)
_TURNS: Final = [
    "human",
    "human",
    "ai",
    "tools",
    "tools",
    "tools",
    "orphan",
    "late",
    "system",
    "chunk",
    "function",
    "chat",
]


class _Thread:
    """A LangChain thread being drawn: unique ids, and the calls still unanswered."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.messages: list[LcMessage] = []
        self.unanswered: list[str] = []
        self.ids = itertools.count(1)

    def add(self, make: Callable[..., LcMessage], **fields: Any) -> None:
        fields.setdefault("content", self.draw(_SHORT_CONTENT))
        if self.draw(st.integers(0, 4)) == 0:
            fields.setdefault("name", self.draw(st.sampled_from(["ann", "bot-7", ""])))
        self.messages.append(_quiet(lambda: make(id=f"m{next(self.ids)}", **fields)))

    def answer(self, call: str) -> None:
        tool = lc.ToolMessageChunk if self.draw(st.integers(0, 3)) == 0 else lc.ToolMessage
        self.add(tool, tool_call_id=call)

    def tool_group(self) -> None:
        """An AI message with 1-3 calls, then their answers in any order, some missing."""
        n = len(self.messages)
        calls = [f"c{n}-{i}" for i in range(self.draw(st.integers(1, 3)))]
        content = self.draw(st.one_of(st.sampled_from(["", "ok"]), _SHORT_CONTENT))
        style = self.draw(st.sampled_from(["ai", "ai", "chunk_calls", "chunk_call_chunks"]))
        if style == "ai":
            made = [_tool_call("f", {"q": self.draw(_WORD)}, c) for c in calls]
            self.add(lc.AIMessage, content=content, tool_calls=made)
        elif style == "chunk_calls":
            made = [_tool_call("f", {"q": self.draw(_WORD)}, c) for c in calls]
            self.add(lc.AIMessageChunk, content=content, tool_calls=made)
        else:
            chunks = [
                {"name": "f", "args": json.dumps({"q": self.draw(_WORD)}), "id": c, "index": i}
                for i, c in enumerate(calls)
            ]
            self.add(lc.AIMessageChunk, content=content, tool_call_chunks=chunks)
        for call in self.draw(st.permutations(calls)):
            if self.draw(st.integers(0, 5)) == 0:  # answered later, or never
                self.unanswered.append(call)
            else:
                self.answer(call)

    def turn(self) -> None:
        kind = self.draw(st.sampled_from(_TURNS))
        if kind == "human":
            cls = lc.HumanMessageChunk if self.draw(st.integers(0, 4)) == 0 else lc.HumanMessage
            self.add(cls)
        elif kind == "ai":
            self.add(lc.AIMessage)
        elif kind == "tools":
            self.tool_group()
        elif kind == "orphan":  # an answer to no call, or to a call made after it
            self.answer(self.draw(st.sampled_from(["nobody", f"c{len(self.messages) + 1}-0"])))
        elif kind == "late" and self.unanswered:
            self.answer(self.unanswered.pop(self.draw(st.integers(0, len(self.unanswered) - 1))))
        elif kind == "system":
            self.add(lc.SystemMessage)
        elif kind == "chunk":
            self.add(lc.AIMessageChunk)
        elif kind == "function":
            self.add(lc.FunctionMessage, name="fn")
        elif kind == "chat":
            self.add(lc.ChatMessage, role=self.draw(st.sampled_from(["critic", "user"])))


@st.composite
def lc_threads(draw: st.DrawFn, max_turns: int = 12) -> list[LcMessage]:
    """A LangChain thread: a system message first or not, turns with tool groups
    (cut, answered late, orphaned answers), chunks, multimodal content, names."""
    thread = _Thread(draw)
    if draw(st.booleans()):
        first = draw(st.sampled_from(["system", "developer", "chunk"]))
        if first == "chunk":
            thread.add(lc.SystemMessageChunk)
        elif first == "developer":
            thread.add(lc.SystemMessage, additional_kwargs={"__openai_role__": "developer"})
        else:
            thread.add(lc.SystemMessage)
    for _ in range(draw(st.integers(0, max_turns))):
        thread.turn()
    return thread.messages


def _types(draw: st.DrawFn) -> tuple[tuple[str, ...], Any]:
    """A start_on / end_on: ours (a tuple) and LangChain's (a string, a list or a tuple)."""
    chosen = tuple(
        draw(st.lists(st.sampled_from(MESSAGE_TYPES), min_size=1, max_size=3, unique=True))
    )
    form = draw(st.sampled_from(["str", "list", "tuple"]))
    if form == "str" and len(chosen) == 1:
        return chosen, chosen[0]
    return chosen, list(chosen) if form == "list" else chosen


@st.composite
def trims(draw: st.DrawFn, total: int) -> tuple[Trim, dict[str, Any]]:
    """A Trim and the same arguments for trim_messages (only combinations it accepts)."""
    strategy: Strategy = draw(st.sampled_from(["last", "first"]))
    last = strategy == "last"
    budget = draw(st.one_of(st.integers(0, total + 10), st.integers(0, 12)))
    kwargs: dict[str, Any] = {"max_tokens": budget, "strategy": strategy}
    include_system = last and draw(st.booleans())
    if include_system:
        kwargs["include_system"] = True
    start_on: tuple[str, ...] = ()
    end_on: tuple[str, ...] = ()
    if last and draw(st.booleans()):
        start_on, kwargs["start_on"] = _types(draw)
    if draw(st.booleans()):
        end_on, kwargs["end_on"] = _types(draw)
    t = Trim(budget, strategy, include_system, start_on, end_on)
    return t, kwargs


def _langchain(thread: list[LcMessage], kwargs: dict[str, Any]) -> list[LcMessage]:
    result: list[LcMessage] = _quiet(
        lambda: trim_messages(thread, token_counter=APPROXIMATE, allow_partial=False, **kwargs)
    )
    return result


def _places(kept: Sequence[Sized]) -> list[tuple[str | None, int]]:
    return [(s.message.id, s.position) for s in kept]


def _is_subsequence(items: Sequence[Sized], of: Sequence[Sized]) -> bool:
    it = iter(of)
    return all(any(x is y for y in it) for x in items)


def pair_problems(items: Sequence[Sized], thread: Sequence[Sized], ends: bool) -> list[str]:
    """What breaks a tool pair in ``items``, independently of the module: a tool message
    answering no call of an earlier AI message there; an AI message's call no later tool
    message there answers (``ends``: the thread is waiting on its tools, so exempt)."""
    out: list[str] = []
    called: set[str] = set()
    for at, item in enumerate(items):
        m = item.message
        assert item is thread[item.position]
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in called:
                out.append(f"{m.id} answers no earlier call")
        elif isinstance(m, AIMessage):
            ids = [c["id"] for c in m.tool_calls if isinstance(c.get("id"), str)]
            called.update(ids)
            later = {
                x.message.tool_call_id
                for x in items[at + 1 :]
                if isinstance(x.message, ToolMessage)
            }
            if not ends and not set(ids) <= later:
                out.append(f"{m.id} has unanswered calls {sorted(set(ids) - later)}")
    return out


def _reaches_end(items: Sequence[Sized], thread: Sequence[Sized]) -> bool:
    return bool(items) and items[-1] is thread[-1]


def _system_lead(thread: Sequence[Sized], t: Trim) -> Sized | None:
    """The system message trim_messages keeps whatever the budget."""
    if t.include_system and thread and isinstance(thread[0].message, SystemMessage):
        return thread[0]
    return None


@MAIN
@given(data=st.data())
def test_the_trim_is_trim_messages_and_the_window_is_it_wherever_valid(
    data: st.DataObject,
) -> None:
    lc_thread = data.draw(lc_threads())
    ours = to_messages(lc_thread)
    whole = sized(ours)
    assert [s.tokens for s in whole] == [_count([m]) for m in lc_thread]
    t, kwargs = data.draw(trims(sum(s.tokens for s in whole)))
    theirs = _langchain(lc_thread, kwargs)
    at = {m.id: i for i, m in enumerate(lc_thread)}
    expected = [(m.id, at[m.id]) for m in theirs]
    assert all(m is lc_thread[p] for m, (_, p) in zip(theirs, expected, strict=True))

    # 1. Always, valid or not: the trim is trim_messages'.
    kept, ends = trimmed(Span(whole), t)
    assert _places(kept) == expected
    assert ends == _reaches_end(kept, whole)
    r = [whole[p] for _, p in expected]

    # 2. LangChain's answer is valid iff repairing it changes nothing, and that agrees
    #    with an independent reading of the rule.
    fixed, changed = repaired(list(r), ends, t)
    valid = not changed
    assert (fixed == r) if valid else (fixed != r)
    assert valid == (not pair_problems(r, whole, ends)), pair_problems(r, whole, ends)

    got = window(Span(whole), t)
    assert got.tokens == sum(s.tokens for s in got.items)
    if valid:
        event("LangChain's window valid")
        assert got.adjusted is None
        assert got.items == r
    else:
        event("LangChain's window broke a tool pair")
        assert got.adjusted == "tool_pairs"
        assert _is_subsequence(got.items, r) and len(got.items) < len(r)
        strict = pair_problems(got.items, whole, _reaches_end(got.items, whole))
        if strict:
            # The documented rule (test_a_repair_..._keeps_a_call_never_answered below): LangChain's
            # window ended on the thread's last message, the repair dropped the trailing
            # orphan answers and still exempted the now-last AI message's pending calls.
            assert ends and not _reaches_end(got.items, whole), strict
            assert isinstance(r[-1].message, ToolMessage) and r[-1] not in got.items
            assert not pair_problems(got.items, whole, ends=True), strict
            event("repair kept calls pending after dropping the thread's last message")
        if t.start_on:
            rest = got.items[1:] if got.items[:1] == [_system_lead(whole, t)] else got.items
            assert not rest or rest[0].message.type in t.start_on
        if t.end_on and got.items and got.items != [_system_lead(whole, t)]:
            # (the kept system message alone is LangChain's answer whatever end_on says)
            assert got.items[-1].message.type in t.end_on

    # 3. The budget, except for a system message over it alone (as LangChain keeps it).
    lead = _system_lead(whole, t)
    if got.tokens > t.max_tokens:
        event("a system message alone over the budget")
        assert t.strategy == "last" and lead is not None and lead.tokens > t.max_tokens
        assert got.items == [lead] == r
        assert [m.id for m in theirs] == [lc_thread[0].id]


@pytest.mark.parametrize(
    ("kwargs", "first"),
    [
        ({}, lc.SystemMessage("x" * 400, id="s")),
        ({"start_on": "human"}, lc.SystemMessage("x" * 400, id="s")),
        ({"end_on": ["ai", "human"]}, lc.SystemMessageChunk(content="x" * 400, id="s")),
        (
            {},
            lc.SystemMessage("x" * 400, id="s", additional_kwargs={"__openai_role__": "developer"}),
        ),
    ],
    ids=["plain", "start_on", "end_on_chunk", "developer"],
)
def test_a_system_message_over_the_budget_is_kept_alone_as_langchain_keeps_it(
    kwargs: dict[str, Any], first: LcMessage
) -> None:
    thread = [first, lc.HumanMessage("hi", id="h"), lc.AIMessage("hello", id="a")]
    for budget in (0, 5, 20, 100):
        kw = {"max_tokens": budget, "include_system": True, **kwargs}
        t = Trim(
            budget,
            include_system=True,
            start_on=(kwargs["start_on"],) if "start_on" in kwargs else (),
            end_on=tuple(kwargs.get("end_on", ())),
        )
        theirs = [m.id for m in _langchain(thread, kw)]
        got = window(Span(sized(to_messages(thread))), t)
        assert theirs == [m.message.id for m in got.items] == ["s"]
        assert got.adjusted is None and got.tokens > budget
        assert got.tokens == _count([first])


def test_langchain_returns_the_orphaned_answers_a_cut_leaves_and_the_window_drops_them() -> None:
    """langchain-ai/langchain#33245: the last-N window starts on tool messages whose AI
    message it cut off."""
    thread = [
        lc.HumanMessage("weather in Paris and Rome?", id="h"),
        lc.AIMessage(
            "",
            id="a",
            tool_calls=[
                {"name": "weather", "args": {"city": "Paris"}, "id": "c1"},
                {"name": "weather", "args": {"city": "Rome"}, "id": "c2"},
            ],
        ),
        lc.ToolMessage("sunny", tool_call_id="c1", id="t1"),
        lc.ToolMessage("rainy", tool_call_id="c2", id="t2"),
        lc.AIMessage("Paris is sunny, Rome is rainy.", id="r"),
    ]
    whole = sized(to_messages(thread))
    budget = sum(s.tokens for s in whole[3:])
    theirs = [m.id for m in _langchain(thread, {"max_tokens": budget})]
    assert theirs == ["t2", "r"]  # an answer to a call LangChain did not keep
    got = window(Span(whole), Trim(budget))
    assert [s.message.id for s in got.items] == ["r"] and got.adjusted == "tool_pairs"


def test_a_repair_that_drops_the_threads_last_message_keeps_a_call_never_answered() -> None:
    """The rule (docs/semantics.md, "Valid tool pairs"): a call need not be answered in
    the window when LangChain's window ran to the thread's end. Here it did, ending on an
    answer to no call; the repair drops that orphan, and the AI message before it stays:
    nothing in the thread answers its call, so no answer was lost."""
    thread = [
        lc.HumanMessage("q", id="h"),
        lc.AIMessage("", id="a", tool_calls=[{"name": "f", "args": {}, "id": "c1"}]),
        lc.ToolMessage("r", tool_call_id="nobody", id="t"),
    ]
    assert [m.id for m in _langchain(thread, {"max_tokens": 1000})] == ["h", "a", "t"]
    whole = sized(to_messages(thread))
    got = window(Span(whole), Trim(1000))
    assert got.adjusted == "tool_pairs"
    assert [s.message.id for s in got.items] == ["h", "a"]


# -- partial reads ------------------------------------------------------------------------


def _too_little(part: Sequence[Sized], first: Sized, t: Trim) -> bool:
    """Whether a read of ``part`` (and the thread's ``first`` message) cannot decide:
    trim_messages would keep all of it, so it may keep more (or, after end_on, nothing
    is left of it)."""
    if t.strategy == "first":
        return sum(s.tokens for s in part) <= t.max_tokens
    seq = list(part)
    while seq and t.end_on and seq[-1].message.type not in t.end_on:
        seq.pop()
    budget = t.max_tokens
    if t.include_system and isinstance(first.message, SystemMessage):
        budget = max(0, budget - first.tokens)
    return not seq or sum(s.tokens for s in seq) <= budget


def _part(whole: list[Sized], j: int, t: Trim) -> Span:
    if t.strategy == "last":
        return Span(items=whole[j:], complete=False, first=whole[0])
    return Span(items=whole[:j], complete=False)


@SETTINGS
@given(data=st.data())
def test_a_read_of_part_of_the_thread_gives_the_whole_threads_window(
    data: st.DataObject,
) -> None:
    lc_thread = data.draw(lc_threads(max_turns=14))
    whole = sized(to_messages(lc_thread))
    if len(whole) < 2:
        event("thread too short for a partial read")
        return
    t, kwargs = data.draw(trims(sum(s.tokens for s in whole)))
    expected = window(Span(whole), t)
    at = {m.id: i for i, m in enumerate(lc_thread)}
    theirs = [(m.id, at[m.id]) for m in _langchain(lc_thread, kwargs)]
    assert _places(trimmed(Span(whole), t)[0]) == theirs
    n = len(whole)
    drawn = data.draw(st.integers(1, n) if t.strategy == "last" else st.integers(0, n), "j")
    # The boundary read, all but the first message (last) or all of it (first), decides
    # whenever the thread holds more than trim_messages keeps: some read does.
    boundary = 1 if t.strategy == "last" else n
    for j in (drawn, boundary):
        part = _part(whole, j, t)
        short = _too_little(part.items, whole[0], t)
        try:
            got = window(part, t)
        except NeedMore:
            assert short, j
            event("NeedMore")
            continue
        assert not short, j
        assert got == expected, j
        event("decided")
