"""A thread's context window: the messages a model can take, trimmed to a token budget
with LangChain's ``trim_messages`` semantics (langchain-core 1.8.3), then made valid.

Pure, no I/O. Three parts:

* **Counting.** ``approximate`` is LangChain's ``count_tokens_approximately`` with its
  defaults, one message at a time. LangChain rounds up per message and sums, so a list's
  count is the sum of its messages' counts: the storage layer keeps each message's count
  in its record (:mod:`threadfold.workers.storage.pages`) and a window is found by
  adding, never by counting a whole thread again.
* **Trimming** (:func:`window`): ``trim_messages(messages, max_tokens=..., strategy=...,
  include_system=..., start_on=..., end_on=..., allow_partial=False,
  token_counter=...)``, the same steps in the same order, over what a read holds of a
  thread: all of it, or (so that a window of a long thread costs what the window costs)
  its last messages and its first one (``strategy="last"``) or its first ones
  (``"first"``). When that is not enough to decide, :class:`NeedMore` asks for more.
* **Repair** (:func:`repaired`): LangChain cuts between an ``AIMessage`` and the
  ``ToolMessage`` answers to its calls (langchain-ai/langchain#33245), which every
  provider refuses. The window is LangChain's whenever LangChain's is valid; otherwise
  each broken tool group is dropped whole, ``start_on``/``end_on`` applied again, until
  nothing changes, and the answer says so (``adjusted: "tool_pairs"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from threadfold.core.messages import (
    TYPE_OF,
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

Strategy: TypeAlias = Literal["last", "first"]
Counter: TypeAlias = Literal["approximate"]
Adjusted: TypeAlias = Literal["tool_pairs"]

STRATEGIES: Final[tuple[Strategy, ...]] = ("last", "first")
COUNTERS: Final[tuple[Counter, ...]] = ("approximate",)
#: The message types ``start_on`` and ``end_on`` name: LangChain's ``type`` strings of
#: the messages a state can hold (a chunk's is its class name, as in LangChain, where
#: ``start_on="ai"`` does not match an ``AIMessageChunk``).
MESSAGE_TYPES: Final[tuple[str, ...]] = tuple(
    t for cls, t in TYPE_OF.items() if cls is not RemoveMessage
)
#: The largest budget asked for: past any model's window, and small enough that no sum
#: of a thread's counts nears a float's exact integers (LangChain sums floats).
MAX_TOKENS: Final = 100_000_000

# count_tokens_approximately's defaults.
_CHARS_PER_TOKEN: Final = 4
_EXTRA_PER_MESSAGE: Final = 3
_TOKENS_PER_IMAGE: Final = 85
#: A record's count is 4 bytes (pages.py): a message past this is counted as this.
MAX_COUNT: Final = 2**32 - 1


def _length(value: Any) -> int:
    """``len(value)`` where LangChain takes it; a value it would fail on (``len(None)``)
    is counted as its repr: that input has no LangChain answer to match."""
    if isinstance(value, str | list | dict | tuple):
        return len(value)
    return len(repr(value))


def _role(message: BaseMessage) -> str:
    """LangChain's ``_get_message_openai_role``."""
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get("__openai_role__", "system")
        return role if isinstance(role, str) else "system"  # LangChain: TypeError
    if isinstance(message, FunctionMessage):
        return "function"
    if isinstance(message, ChatMessage):
        return message.role
    return message.type  # a RemoveMessage: never in a state


def _block_chars(content: list[Any]) -> tuple[int, int]:
    """The characters and the images of a list content, as LangChain counts them."""
    chars = images = 0
    for block in content:
        if isinstance(block, str):
            chars += len(block)
        elif isinstance(block, dict):
            kind = block.get("type", "")
            # a tuple, not a set: a block's type may be unhashable JSON (a list)
            if kind in ("image", "image_url"):
                images += 1
            elif kind == "text":
                chars += _length(block.get("text", ""))
            else:
                chars += len(repr(block))
        else:
            chars += len(repr(block))
    return chars, images


def _kind(cls: type[BaseMessage]) -> tuple[int | None, bool, bool]:
    """A class's role length when the class fixes it (None: a system or chat message's
    own), and whether it is an AI message and a tool message."""
    fixed = None
    for base, role in ((AIMessage, "assistant"), (HumanMessage, "user"),
                       (ToolMessage, "tool"), (FunctionMessage, "function")):  # _role's order
        if issubclass(cls, base):
            fixed = len(role)
            break
    return fixed, issubclass(cls, AIMessage), issubclass(cls, ToolMessage)


# Per class, once: every commit counts each message it writes (a table halves a short
# message's count, 0.58 -> 0.29 us, against the isinstance chain).
_KINDS: Final = {cls: _kind(cls) for cls in TYPE_OF if cls is not RemoveMessage}


def approximate(message: BaseMessage) -> int:
    """``count_tokens_approximately([message])`` with LangChain's defaults: the content's
    characters (a text block's text, 85 tokens an image, any other block its repr), an
    AI message's tool calls' repr (unless its content is a list), a tool message's call
    id, the role and the name, a quarter token a character rounded up, and 3 a message."""
    content = message.content
    if isinstance(content, str):
        chars, images = len(content), 0
    else:
        chars, images = _block_chars(content)
    role, ai, tool = _KINDS.get(type(message), (None, False, False))
    if ai and isinstance(content, str):
        calls = message.tool_calls  # type: ignore[attr-defined]  # an AIMessage's
        if calls:
            chars += len(repr(calls))
    if tool:
        chars += len(message.tool_call_id)  # type: ignore[attr-defined]  # a ToolMessage's
    chars += len(_role(message)) if role is None else role
    if message.name:
        chars += len(message.name)
    tokens = -(-chars // _CHARS_PER_TOKEN) + _EXTRA_PER_MESSAGE + _TOKENS_PER_IMAGE * images
    return min(tokens, MAX_COUNT)


#: Each counter: one message's tokens (a list's count is the sum of its messages').
COUNT: Final[dict[Counter, Callable[[BaseMessage], int]]] = {"approximate": approximate}


@dataclass(frozen=True, slots=True)
class Trim:
    """``trim_messages``' arguments (``allow_partial`` is always False: a message is in
    the window whole or not at all)."""

    max_tokens: int
    strategy: Strategy = "last"
    include_system: bool = False
    start_on: tuple[str, ...] = ()
    end_on: tuple[str, ...] = ()
    counter: Counter = "approximate"


@dataclass(frozen=True, slots=True)
class Sized:
    """A message of a thread, its token count and its position (its place in the
    thread; only the order matters here)."""

    message: BaseMessage
    tokens: int
    position: int


@dataclass(frozen=True, slots=True)
class Span:
    """What a read holds of a thread, in order. ``complete``: every message of it.
    Otherwise, for ``strategy="last"``, ``first`` is the thread's first message and
    ``items`` its last ones; for ``"first"``, ``items`` are its first ones."""

    items: Sequence[Sized]
    complete: bool = True
    first: Sized | None = None


class NeedMore(Exception):
    """The span did not reach the window's far edge: read a longer one."""


@dataclass(frozen=True, slots=True)
class Window:
    """The window: its messages in thread order, their tokens, and which rule changed
    LangChain's answer (None: it is LangChain's)."""

    items: list[Sized]
    tokens: int
    adjusted: Adjusted | None


def _is(item: Sized, types: tuple[str, ...]) -> bool:
    return item.message.type in types


def _fit(items: Sequence[Sized], budget: int) -> int:
    """How many of ``items``, from the first, fit in ``budget`` (the prefix LangChain's
    binary search finds: every count is positive, so the sums rise)."""
    used = 0
    for n, item in enumerate(items):
        used += item.tokens
        if used > budget:
            return n
    return len(items)


def trimmed(span: Span, t: Trim) -> tuple[list[Sized], bool]:
    """LangChain's window of the thread ``span`` holds (NeedMore if it cannot tell),
    and whether it ends on the thread's last message."""
    if t.strategy == "first":
        return _first(span, t)
    return _last(span, t)


def _first(span: Span, t: Trim) -> tuple[list[Sized], bool]:
    items = list(span.items)
    n = _fit(items, t.max_tokens)
    if n == len(items) and not span.complete:
        raise NeedMore
    kept = items[:n]
    while kept and t.end_on and not _is(kept[-1], t.end_on):
        kept.pop()
    return kept, span.complete and bool(kept) and len(kept) == len(items)


def _last(span: Span, t: Trim) -> tuple[list[Sized], bool]:
    seq = list(span.items)
    popped = False
    while seq and t.end_on and not _is(seq[-1], t.end_on):  # trim_messages' first step
        seq.pop()
        popped = True
    if not seq:
        if not span.complete:
            raise NeedMore
        return [], False
    head = seq[0] if span.complete else span.first
    system = head if t.include_system and head and isinstance(head.message, SystemMessage) else None
    rest = seq[1:] if system is not None and span.complete else seq
    budget = t.max_tokens if system is None else max(0, t.max_tokens - system.tokens)
    newest_first = rest[::-1]
    n = _fit(newest_first, budget)
    if n == len(newest_first) and not span.complete:
        raise NeedMore
    while n > 0 and t.start_on and not _is(newest_first[n - 1], t.start_on):
        n -= 1
    kept = newest_first[:n][::-1]
    window = kept if system is None else [system, *kept]
    ends = not popped and bool(window) and window[-1] is seq[-1]
    return window, ends


# -- validity ------------------------------------------------------------------------------


def _calls(message: BaseMessage) -> list[str]:
    """The ids of an AI message's tool calls (a call with no id cannot be answered)."""
    if not isinstance(message, AIMessage):
        return []
    return [c["id"] for c in message.tool_calls if isinstance(c.get("id"), str)]


def _broken(items: Sequence[Sized], ends: bool) -> set[int]:
    """The indexes of ``items`` that break a tool pair: an AI message with a call no
    later tool message answers (unless ``ends``: LangChain's window ran to the thread's
    end, so no answer after it exists to lose; the repair drops only unanswered calls'
    groups and orphans, never an answer a kept call has), and a tool message no earlier
    AI message kept called."""
    answered: set[str] = set()
    out: set[int] = set()
    for i in range(len(items) - 1, -1, -1):
        message = items[i].message
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
        elif not ends and any(c not in answered for c in _calls(message)):
            out.add(i)
    called: set[str] = set()
    for i, item in enumerate(items):
        if i in out:
            continue
        if isinstance(item.message, ToolMessage):
            if item.message.tool_call_id not in called:
                out.add(i)
        else:
            called.update(_calls(item.message))
    return out


def repaired(window: list[Sized], ends: bool, t: Trim) -> tuple[list[Sized], bool]:
    """``window`` with every broken tool group dropped whole and ``start_on`` and
    ``end_on`` applied again, until no pair is broken; and whether anything was. A
    window with no broken pair is returned as it is (LangChain's answer stands)."""
    system = (
        window[0]
        if window and t.include_system and isinstance(window[0].message, SystemMessage)
        else None
    )
    changed = False
    while broken := _broken(window, ends):
        window = [item for i, item in enumerate(window) if i not in broken]
        lead = 1 if window and window[0] is system else 0
        while len(window) > lead and t.start_on and not _is(window[lead], t.start_on):
            del window[lead]
        # The kept system message is LangChain's whatever follows it (its end_on ran
        # before the system message was set aside): the repair never pops it.
        while len(window) > lead and t.end_on and not _is(window[-1], t.end_on):
            window.pop()
            ends = False
        changed = True
    return window, changed


def window(span: Span, t: Trim) -> Window:
    """The valid window of the thread ``span`` holds (NeedMore: read a longer span)."""
    kept, ends = trimmed(span, t)
    kept, changed = repaired(kept, ends, t)
    return Window(kept, sum(i.tokens for i in kept), "tool_pairs" if changed else None)


def sized(messages: Sequence[BaseMessage], counter: Counter = "approximate") -> list[Sized]:
    """A whole thread held in memory (a replayed one, a follower's), counted."""
    count = COUNT[counter]
    return [Sized(m, count(m), i) for i, m in enumerate(messages)]
