"""Laws of the context window (threadfold.core.context), by Hypothesis: the window of a
thread that is a prefix of a valid conversation is valid, whatever the trim; it is the
thread's messages in order, within the budget, starting and ending where asked."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadfold.core import to_messages
from threadfold.core.context import MESSAGE_TYPES, Sized, Span, Trim, sized, window
from threadfold.core.messages import AIMessage, SystemMessage, ToolMessage

_TEXT = st.text(alphabet="abc xyz", max_size=80)


@st.composite
def prefix_valid(draw: st.DrawFn) -> list[Sized]:
    """A valid conversation cut anywhere: every tool message answers a call made before
    it, every call is answered, except those of the last tool group when the cut falls
    inside it."""
    items: list[dict[str, Any]] = []
    if draw(st.booleans()):
        items.append({"type": "system", "content": draw(_TEXT), "id": "sys"})
    for turn in range(draw(st.integers(0, 10))):
        items.append({"type": "human", "content": draw(_TEXT), "id": f"h{turn}"})
        for step in range(draw(st.integers(0, 2))):
            calls = [f"c{turn}.{step}.{i}" for i in range(draw(st.integers(1, 3)))]
            items.append({"type": "ai", "content": "", "id": f"a{turn}.{step}",
                          "tool_calls": [{"name": "f", "args": {}, "id": c} for c in calls]})
            items += [{"type": "tool", "content": draw(_TEXT), "tool_call_id": c,
                       "id": f"t{c}"} for c in draw(st.permutations(calls))]
        items.append({"type": "ai", "content": draw(_TEXT), "id": f"r{turn}"})
    cut = draw(st.integers(0, len(items)))
    return sized(to_messages(items[:cut]))


_TYPES = st.lists(st.sampled_from(MESSAGE_TYPES), min_size=1, max_size=2).map(tuple)


@st.composite
def trims(draw: st.DrawFn, total: int) -> Trim:
    last = draw(st.booleans())
    return Trim(
        max_tokens=draw(st.integers(1, total + 5)),
        strategy="last" if last else "first",
        include_system=last and draw(st.booleans()),
        start_on=draw(_TYPES) if last and draw(st.booleans()) else (),
        end_on=draw(_TYPES) if draw(st.booleans()) else (),
    )


def _answers(thread: list[Sized], at: int) -> list[Sized]:
    """The tool messages after ``thread[at]`` answering its calls."""
    m = thread[at].message
    assert isinstance(m, AIMessage)
    calls = {c["id"] for c in m.tool_calls}
    return [x for x in thread[at + 1:]
            if isinstance(x.message, ToolMessage) and x.message.tool_call_id in calls]


@settings(max_examples=800, deadline=None)
@given(data=st.data())
def test_the_window_of_a_prefix_valid_thread_is_valid(data: st.DataObject) -> None:
    thread = data.draw(prefix_valid())
    t = data.draw(trims(sum(s.tokens for s in thread)))
    got = window(Span(thread), t).items
    places = [thread.index(item) for item in got]
    assert places == sorted(set(places))  # the thread's messages, in order, once each
    inside = set(places)
    for place in places:
        m = thread[place].message
        if isinstance(m, ToolMessage):  # its call is in the window, before it
            callers = [i for i in places if i < place and isinstance(thread[i].message, AIMessage)
                       and any(c["id"] == m.tool_call_id
                               for c in thread[i].message.tool_calls)]  # type: ignore[attr-defined]
            assert callers, m.id
        if isinstance(m, AIMessage) and m.tool_calls:  # no answer of it was lost
            assert all(thread.index(a) in inside for a in _answers(thread, place)), m.id
    tokens = sum(i.tokens for i in got)
    system_kept = bool(got) and isinstance(got[0].message, SystemMessage) and t.include_system
    assert tokens <= t.max_tokens or (system_kept and tokens - got[0].tokens <= t.max_tokens)
    rest = got[1:] if system_kept else got
    if t.start_on and rest:
        assert rest[0].message.type in t.start_on
    if t.end_on and rest:  # (a kept system message alone is LangChain's answer too)
        assert got[-1].message.type in t.end_on


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_budget_the_whole_thread_fits_in_keeps_it_all(data: st.DataObject) -> None:
    thread = data.draw(prefix_valid())
    total = sum(s.tokens for s in thread)
    for t in (Trim(max(total, 1)), Trim(max(total, 1), "first"),
              Trim(max(total, 1), include_system=True)):
        got = window(Span(thread), t)
        assert got.items == thread and got.adjusted is None and got.tokens == total
