"""``to_messages`` against langchain-core's ``convert_to_messages``, input by input.

A seeded corpus (``message_corpus.py``) of valid and invalid message-likes goes through both.
Where LangChain builds messages, ours must dump to the same flat ``model_dump()`` form:
same keys in the same order, same values of the same types (``True`` is not ``1``).
Where LangChain raises, ours must raise :class:`InvalidMessage` whose ``lc_error`` is
the name of LangChain's exception class, and whose text locates the item
(``messages[0]...``) and says what was expected.

The one documented extension: a top-level dict without ``role`` whose ``type`` is a
chunk class name builds that chunk. For those inputs the expectation is LangChain's own
constructor, ``AIMessageChunk(**item)`` and so on, instead of the refusal of
``convert_to_messages``. lc envelopes of chunk classes are not part of the extension and
must still be refused as LangChain refuses them. Nothing else is excluded: inputs only
Python can produce (bytes, sets, non-string keys) are compared like the rest.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core import messages as lc

from tests.differential.message_corpus import CHUNK_TYPES, corpus
from threadfold.core import InvalidMessage, dump_messages, to_messages

pytestmark = pytest.mark.differential

SEEDS = (20240611, 7, 1_000_003)
PER_SEED = 5_000
#: Every so many dict inputs, the LangChain message built from it is fed in as well.
OBJECT_EVERY = 10
SHOW = 30
PATH_PREFIX = re.compile(r"^messages\[0\](?=[.:\[])")
#: Every exception class LangChain raises on this path must show up in the corpus.
LC_ERRORS = {
    "ValueError",
    "KeyError",
    "TypeError",
    "NotImplementedError",
    "ValidationError",
    "JSONDecodeError",
    "AttributeError",
}


@dataclass(frozen=True)
class Outcome:
    """What one side did with one input: ``ok`` with the dumps, or the error class."""

    ok: bool
    value: Any  # canonical dumps when ok, the error class name otherwise
    text: str  # a readable rendering for the report


def canonical(value: Any) -> Any:
    """A comparable form that keeps dict key order and tells ``True``, ``1`` and ``1.0`` apart."""
    if isinstance(value, dict):
        return ("dict", tuple((canonical(k), canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(canonical(v) for v in value))
    return (type(value).__name__, repr(value))


def is_extension(item: Any) -> bool:
    """Our chunk extension applies: a dict without role whose type names a chunk class."""
    if not isinstance(item, dict) or "role" in item:
        return False
    kind = item.get("type")
    return isinstance(kind, str) and kind in CHUNK_TYPES


def langchain_outcome(item: Any) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if is_extension(item):
                built = [getattr(lc, item["type"])(**item)]
            else:
                built = lc.convert_to_messages([item])
        except Exception as exc:  # any refusal is an outcome to compare
            return Outcome(False, type(exc).__name__, f"{type(exc).__name__}: {exc}"[:300])
        dumps = [m.model_dump() for m in built]
    return Outcome(True, canonical(dumps), repr(dumps))


def our_outcome(item: Any, problems: list[str]) -> Outcome:
    """Ours; a malformed error text is recorded in ``problems``."""
    try:
        dumps = dump_messages(to_messages([item]))
    except InvalidMessage as exc:
        text = str(exc)
        if not PATH_PREFIX.match(text) or len(exc.reason.strip()) < 4:
            problems.append(f"badly worded error for {item!r}: {text!r}")
        return Outcome(False, exc.lc_error, f"InvalidMessage[{exc.lc_error}]: {text}")
    except Exception as exc:  # a crash is a mismatch, reported as such
        return Outcome(False, f"crash:{type(exc).__name__}", f"CRASH {type(exc).__name__}: {exc}")
    return Outcome(True, canonical(dumps), repr(dumps))


def with_langchain_objects(items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The corpus plus some LangChain message objects (chunks included) built from it."""
    result = list(items)
    dicts = [item for _, item in items if isinstance(item, dict)]
    for item in dicts[::OBJECT_EVERY]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                built = (
                    getattr(lc, item["type"])(**copy.deepcopy(item))
                    if is_extension(item)
                    else lc.convert_to_messages([copy.deepcopy(item)])[0]
                )
            except Exception:  # only inputs LangChain accepts
                continue
        result.append(("langchain_object", built))
    return result


def full_corpus() -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for seed in SEEDS:
        items.extend(corpus(seed, PER_SEED))
    return with_langchain_objects(items)


def describe(form: str, item: Any, expected: Outcome, got: Outcome) -> str:
    return (
        f"[{form}] input: {item!r}"[:700]
        + f"\n    langchain: {expected.text[:700]}\n    ours:      {got.text[:700]}"
    )


def test_to_messages_matches_convert_to_messages_on_a_random_corpus() -> None:
    items = full_corpus()
    mismatches: list[str] = []
    problems: list[str] = []
    lc_errors: Counter[str] = Counter()
    for form, item in items:
        expected = langchain_outcome(copy.deepcopy(item))
        got = our_outcome(copy.deepcopy(item), problems)
        if not expected.ok:
            lc_errors[expected.value] += 1
        if (expected.ok, expected.value) != (got.ok, got.value):
            mismatches.append(describe(form, item, expected, got))
    report = "\n".join(mismatches[:SHOW] + problems[:SHOW])
    assert not mismatches and not problems, (
        f"{len(mismatches)} mismatches and {len(problems)} badly worded errors "
        f"in {len(items)} inputs; first ones:\n{report}"
    )
    assert len(items) >= 10_000
    assert set(lc_errors) >= LC_ERRORS, f"corpus no longer reaches {LC_ERRORS - set(lc_errors)}"
    accepted = len(items) - sum(lc_errors.values())
    assert accepted > len(items) // 4, "corpus has become mostly invalid"


def _cycle() -> dict[str, Any]:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    return cycle


@pytest.mark.parametrize(
    ("value", "error"),
    [(b"raw", "TypeError"), ({1, 2}, "TypeError"), (_cycle(), "ValidationError")],
    ids=["bytes", "set", "cycle"],
)
def test_chunk_tool_call_arguments_json_cannot_dump_are_refused_as_langchain_refuses(
    value: Any, error: str
) -> None:
    """A chunk derives its tool-call chunks with json.dumps, which LangChain lets raise
    (from a Python caller); ours names the arguments instead of crashing."""
    calls = [{"name": "f", "args": {}, "id": "c0"}, {"name": "f", "args": {"q": value}, "id": "c1"}]
    item = {"type": "AIMessageChunk", "content": "", "tool_calls": calls}
    assert langchain_outcome(item).value == error
    with pytest.raises(InvalidMessage) as raised:
        to_messages([item])
    assert (raised.value.path, raised.value.lc_error) == ("messages[0].tool_calls[1].args", error)
