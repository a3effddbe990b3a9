"""Laws of :mod:`threadfold.core.context`, by Hypothesis, on our module alone.

* The window of a *prefix-valid* thread (a valid conversation cut anywhere) is valid
  whatever the trim: checked by a reading of the rule written here, not ``_broken``.
  It is the thread's messages in order, within the budget (but for a system message
  kept alone over it), starting and ending on the types asked; it is LangChain's trim
  whenever that is valid, and trimming it again changes nothing.
* Budgets: a larger one extends the window (at its end for ``"first"``, at its start
  for ``"last"``).
* A broken input is repaired: a last-N window cutting a tool group from its AI message
  (langchain-ai/langchain#33245) loses the orphaned answers, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from threadfold.core import dump_messages, to_messages
from threadfold.core.context import (
    MESSAGE_TYPES,
    STRATEGIES,
    Sized,
    Span,
    Strategy,
    Trim,
    sized,
    trimmed,
    window,
)
from threadfold.core.messages import AIMessage, SystemMessage, ToolMessage

#: trim_messages' own counter, by name.
APPROXIMATE: Final = "approximate"

SETTINGS: Final = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
#: The main law: more examples (the file stays near 15 s on two slow cores).
MAIN: Final = settings(SETTINGS, max_examples=800)

#: Contents of many sizes, text and multimodal (one draw a message keeps the threads
#: cheap to make; the counting of contents is tests/differential's).
_CONTENTS: Final[list[Any]] = [
    "",
    "ok",
    "hello there",
    "é✓" * 5,
    "x" * 37,
    "a longer message, of about eighty characters, so that it costs twenty tokens or so",
    [{"type": "text", "text": "a text block"}],
    [{"type": "image_url", "image_url": {"url": "https://example.com/y.png"}}],
    ["plain", {"type": "text", "text": "and a block"}, {"type": "reasoning", "reasoning": "r"}],
]
_CONTENT: Final = st.sampled_from(_CONTENTS)
_TEXT: Final = st.sampled_from(["", "Paris", "a somewhat longer argument"])


class _Conversation:
    """A valid conversation being drawn, as message dicts with unique ids."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw
        self.items: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> None:
        fields.setdefault("content", self.draw(_CONTENT))
        if self.draw(st.integers(0, 5)) == 0:
            fields.setdefault("name", "ann")
        self.items.append({"type": kind, "id": f"m{len(self.items)}", **fields})

    def tool_step(self) -> None:
        """An AI message with 1-3 calls, then their answers, in any order."""
        calls = [f"c{len(self.items)}.{i}" for i in range(self.draw(st.integers(1, 3)))]
        made = [{"name": "f", "args": {"q": self.draw(_TEXT)}, "id": c} for c in calls]
        kind = self.draw(st.sampled_from(["ai", "ai", "AIMessageChunk"]))
        self.add(kind, content=self.draw(st.one_of(st.just(""), _CONTENT)), tool_calls=made)
        for call in self.draw(st.permutations(calls)):
            kind = self.draw(st.sampled_from(["tool", "tool", "ToolMessageChunk"]))
            self.add(kind, tool_call_id=call)

    def turn(self) -> None:
        """A human turn, 0-2 tool steps, the answer; now and then a system message."""
        kind = self.draw(st.sampled_from(["human", "human", "HumanMessageChunk", "chat"]))
        self.add(kind, **({"role": "user"} if kind == "chat" else {}))
        for _ in range(self.draw(st.integers(0, 2))):
            self.tool_step()
        kind = self.draw(st.sampled_from(["ai", "ai", "AIMessageChunk", "function"]))
        self.add(kind, **({"name": "fn"} if kind == "function" else {}))
        if self.draw(st.integers(0, 6)) == 0:
            self.add("system")  # a system message in the middle


@st.composite
def prefix_valid(draw: st.DrawFn, max_turns: int = 8) -> list[Sized]:
    """A valid conversation (every call answered right after its AI message, every
    answer to a call made before it), cut anywhere: only the calls of the last AI
    message can then be unanswered, some or all of them."""
    conversation = _Conversation(draw)
    if draw(st.booleans()):
        first = draw(st.sampled_from(["system", "SystemMessageChunk", "developer"]))
        if first == "developer":
            conversation.add("system", additional_kwargs={"__openai_role__": "developer"})
        else:
            conversation.add(first)
    for _ in range(draw(st.integers(0, max_turns))):
        conversation.turn()
    cut = draw(st.integers(0, len(conversation.items)))
    return sized(to_messages(conversation.items[:cut]))


_TYPES: Final = st.lists(st.sampled_from(MESSAGE_TYPES), min_size=1, max_size=3).map(tuple)


def _budgets(thread: Sequence[Sized]) -> st.SearchStrategy[int]:
    """Any budget up to a bit past the thread's total, and often one that a message
    boundary falls on (what one end of the thread holds, to a token or two): the cuts
    then land inside tool groups as often as anywhere."""
    tokens = [s.tokens for s in thread]
    edges = [sum(tokens[:i]) for i in range(len(tokens) + 1)]
    edges += [sum(tokens[i:]) for i in range(len(tokens))]
    return st.one_of(
        st.integers(0, sum(tokens) + 5),
        st.tuples(st.sampled_from(edges), st.integers(-1, 2)).map(lambda e: max(0, sum(e))),
    )


@st.composite
def trims(draw: st.DrawFn, thread: Sequence[Sized], strategy: Strategy | None = None) -> Trim:
    """Any Trim trim_messages accepts: include_system and start_on with "last" only."""
    chosen: Strategy = draw(st.sampled_from(STRATEGIES)) if strategy is None else strategy
    last = chosen == "last"
    return Trim(
        max_tokens=draw(_budgets(thread)),
        strategy=chosen,
        include_system=last and draw(st.booleans()),
        start_on=draw(_TYPES) if last and draw(st.booleans()) else (),
        end_on=draw(_TYPES) if draw(st.booleans()) else (),
    )


# -- an independent reading of the rules ---------------------------------------------------


def broken_pairs(items: Sequence[Sized], thread: Sequence[Sized]) -> list[str]:
    """What breaks a tool pair in the window ``items`` of ``thread``: a tool message
    that answers no call of an earlier AI message in the window; a call of an AI message
    in the window that no later tool message there answers, unless the window ends on
    the thread's last message (the thread is waiting on that tool)."""
    ends = bool(items) and items[-1] is thread[-1]
    out: list[str] = []
    for at, item in enumerate(items):
        m = item.message
        if isinstance(m, ToolMessage):
            callers = [
                x.message.id
                for x in items[:at]
                if isinstance(x.message, AIMessage)
                and any(c.get("id") == m.tool_call_id for c in x.message.tool_calls)
            ]
            if not callers:
                out.append(f"{m.id} answers no call in the window")
        elif isinstance(m, AIMessage) and not ends:
            answered = {
                x.message.tool_call_id
                for x in items[at + 1 :]
                if isinstance(x.message, ToolMessage)
            }
            missing = [c["id"] for c in m.tool_calls if c["id"] not in answered]
            if missing:
                out.append(f"{m.id} has no answer to {missing}")
    return out


def _in_order(items: Sequence[Sized], thread: Sequence[Sized]) -> bool:
    """``items`` are messages of ``thread`` (the very records), in order, once each."""
    places = [i.position for i in items]
    return places == sorted(set(places)) and all(i is thread[i.position] for i in items)


def _lead(items: Sequence[Sized], thread: Sequence[Sized], t: Trim) -> Sized | None:
    """The system message trim_messages keeps at the front whatever the budget."""
    if (
        t.include_system
        and items
        and items[0] is thread[0]
        and isinstance(thread[0].message, SystemMessage)
    ):
        return items[0]
    return None


def _ids(items: Sequence[Sized]) -> list[str | None]:
    return [i.message.id for i in items]


# -- laws ---------------------------------------------------------------------------------


@MAIN
@given(data=st.data())
def test_the_window_of_a_prefix_valid_thread_is_valid(data: st.DataObject) -> None:
    thread = data.draw(prefix_valid())
    assert not broken_pairs(thread, thread)  # the generator's promise
    t = data.draw(trims(thread))
    got = window(Span(thread), t)
    items = got.items

    assert not broken_pairs(items, thread), broken_pairs(items, thread)
    assert _in_order(items, thread)
    assert got.tokens == sum(i.tokens for i in items)
    lead = _lead(items, thread, t)
    if got.tokens > t.max_tokens:  # only a system message kept alone over the budget
        assert t.strategy == "last" and lead is not None and items == [lead]
        assert lead.tokens > t.max_tokens
        event("a system message alone over the budget")
    rest = items[1:] if lead is not None else items
    if t.start_on and rest:
        assert rest[0].message.type in t.start_on
    if t.end_on and rest:  # a kept system message alone is LangChain's answer too
        assert items[-1].message.type in t.end_on

    # The answer is LangChain's trim whenever that is valid, and marked when it is not.
    kept, _ = trimmed(Span(thread), t)
    if broken_pairs(kept, thread):
        event("the trim broke a tool pair")
        assert got.adjusted == "tool_pairs" and len(items) < len(kept)
        assert all(any(i is k for k in kept) for i in items)
    else:
        assert got.adjusted is None and items == kept


@SETTINGS
@given(data=st.data())
def test_trimming_the_window_again_changes_nothing(data: st.DataObject) -> None:
    """Except two legitimate cases, left out: a lone system message kept over end_on
    (LangChain drops what end_on names before it keeps the system message, so the
    window [system] of the thread [system] is []), and a system message that became the
    first of the window only by the trim (it leads the next trim, which include_system
    then keeps outside of start_on)."""
    thread = data.draw(prefix_valid())
    t = data.draw(trims(thread))
    first = window(Span(thread), t).items
    lead = _lead(first, thread, t)
    if t.include_system and first and isinstance(first[0].message, SystemMessage) and not lead:
        event("a system message first by the trim")
        return
    again = window(Span(sized([i.message for i in first])), t)
    if t.end_on and lead is not None and first == [lead] and lead.message.type not in t.end_on:
        assert again.items == []
        return
    assert [i.message for i in again.items] == [i.message for i in first]
    assert again.adjusted is None


@SETTINGS
@given(data=st.data())
def test_a_budget_the_whole_thread_fits_in_keeps_it_all(data: st.DataObject) -> None:
    thread = data.draw(prefix_valid())
    total = sum(s.tokens for s in thread)
    budget = total + data.draw(st.integers(0, 3))
    strategy: Strategy = data.draw(st.sampled_from(["last", "first"]))
    include_system = strategy == "last" and data.draw(st.booleans())
    got = window(Span(thread), Trim(budget, strategy, include_system))
    assert got.items == thread and got.adjusted is None and got.tokens == total


@SETTINGS
@given(data=st.data())
def test_a_larger_budget_extends_a_first_window_at_its_end(data: st.DataObject) -> None:
    """With end_on too: the window is the longest prefix of the trim that is valid and
    ends on an end_on type, and the trim of a larger budget extends the smaller's."""
    thread = data.draw(prefix_valid())
    t = data.draw(trims(thread, "first"))
    more = Trim(t.max_tokens + data.draw(st.integers(0, 60)), "first", end_on=t.end_on)
    small, large = window(Span(thread), t).items, window(Span(thread), more).items
    assert large[: len(small)] == small


@SETTINGS
@given(data=st.data())
def test_a_larger_budget_extends_a_last_window_at_its_start(data: st.DataObject) -> None:
    """Any start_on, end_on and include_system."""
    thread = data.draw(prefix_valid())
    t = data.draw(trims(thread, "last"))
    more = Trim(
        t.max_tokens + data.draw(st.integers(0, 60)), "last", t.include_system, t.start_on, t.end_on
    )
    small, large = window(Span(thread), t).items, window(Span(thread), more).items
    lead_small, lead_large = _lead(small, thread, t), _lead(large, thread, t)
    assert (lead_small is None) == (lead_large is None)
    small_rest = small[1:] if lead_small else small
    large_rest = large[1:] if lead_large else large
    assert len(large_rest) >= len(small_rest)
    assert large_rest[len(large_rest) - len(small_rest) :] == small_rest


def test_include_system_keeps_the_system_message_when_the_repair_empties_the_rest() -> None:
    """trim_messages applies end_on before it sets the system message aside, and keeps
    that one whatever follows. Budget 0 gives [system]; a budget with room for the tool
    answer alone gives trim_messages' [system, answer], whose answer lost its call: the
    repair drops it, then pops the system message too, as not an end_on type."""
    thread = sized(
        to_messages(
            [
                {"type": "system", "content": "be brief", "id": "s"},
                {"type": "human", "content": "hi", "id": "h"},
                {
                    "type": "ai",
                    "content": "",
                    "id": "a",
                    "tool_calls": [{"name": "f", "args": {}, "id": "c"}],
                },
                {"type": "tool", "content": "r", "tool_call_id": "c", "id": "t"},
            ]
        )
    )
    t = Trim(0, include_system=True, end_on=("tool",))
    assert _ids(window(Span(thread), t).items) == ["s"]
    budget = thread[0].tokens + thread[3].tokens
    t = Trim(budget, include_system=True, end_on=("tool",))
    assert _ids(trimmed(Span(thread), t)[0]) == ["s", "t"]  # trim_messages' answer
    got = window(Span(thread), t)
    assert got.adjusted == "tool_pairs"
    assert _ids(got.items) == ["s"]  # today: []


# -- broken inputs repaired ---------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_a_last_window_that_cuts_a_tool_group_loses_its_orphaned_answers(
    data: st.DataObject,
) -> None:
    """The budget is exactly what the thread holds from the k-th answer of a tool group
    on (k >= 1), so trim_messages starts the window on that answer; the window drops
    the answers of the group and starts on what follows them."""
    conversation = _Conversation(data.draw)
    if data.draw(st.booleans()):
        conversation.add("system")
    conversation.add("human")
    conversation.tool_step()
    group = conversation.items[-1]["id"]  # the group ends here
    for _ in range(data.draw(st.integers(0, 3))):
        conversation.turn()
    thread = sized(to_messages(conversation.items))
    end = _ids(thread).index(group)
    answers = [at for at in range(end + 1) if isinstance(thread[at].message, ToolMessage)]
    start = data.draw(st.sampled_from(answers))
    include_system = data.draw(st.booleans())
    lead = thread[0] if include_system and isinstance(thread[0].message, SystemMessage) else None
    budget = sum(s.tokens for s in thread[start:]) + (lead.tokens if lead else 0)
    t = Trim(budget, include_system=include_system)

    kept, _ = trimmed(Span(thread), t)
    assert kept == ([lead] if lead else []) + thread[start:]  # LangChain's, orphans first
    got = window(Span(thread), t)
    assert got.adjusted == "tool_pairs"
    assert got.items == ([lead] if lead else []) + thread[end + 1 :]
    rest = got.items[1:] if lead else got.items
    assert not rest or not isinstance(rest[0].message, ToolMessage)
    assert not broken_pairs(got.items, thread)


@pytest.mark.differential
def test_langchain_keeps_the_orphaned_answer_of_33245_and_the_window_does_not() -> None:
    """The case of langchain-ai/langchain#33245, against LangChain's own trim."""
    utils = pytest.importorskip("langchain_core.messages.utils")
    from tests.differential.lc import lc_from_ours  # noqa: PLC0415  # LangChain here only

    thread = to_messages(
        [
            {"type": "system", "content": "You are a weather bot.", "id": "s"},
            {"type": "human", "content": "Weather in Paris and in Rome?", "id": "h1"},
            {
                "type": "ai",
                "content": "",
                "id": "a1",
                "tool_calls": [
                    {"name": "weather", "args": {"city": "Paris"}, "id": "call_paris"},
                    {"name": "weather", "args": {"city": "Rome"}, "id": "call_rome"},
                ],
            },
            {"type": "tool", "content": "sunny, 24C", "tool_call_id": "call_paris", "id": "t1"},
            {"type": "tool", "content": "rain, 17C", "tool_call_id": "call_rome", "id": "t2"},
            {"type": "ai", "content": "Sunny in Paris, rain in Rome.", "id": "a2"},
            {"type": "human", "content": "Thanks!", "id": "h2"},
        ]
    )
    whole = sized(thread)
    lead = whole[0].tokens
    budget = lead + sum(s.tokens for s in whole[4:])  # room for t2 and after, not for t1
    theirs = utils.trim_messages(
        [lc_from_ours(d) for d in dump_messages(thread)],
        max_tokens=budget,
        token_counter=APPROXIMATE,
        strategy="last",
        include_system=True,
        allow_partial=False,
    )
    assert [m.id for m in theirs] == ["s", "t2", "a2", "h2"]  # t2 answers a call it cut
    got = window(Span(whole), Trim(budget, include_system=True))
    assert _ids(got.items) == ["s", "a2", "h2"]
    assert got.adjusted == "tool_pairs"
    assert got.tokens == lead + whole[5].tokens + whole[6].tokens <= budget
