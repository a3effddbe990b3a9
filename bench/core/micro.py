"""Micro-benchmarks: dict conversion, and the msgpack codec against LangChain's round trips.

Conversion: ``core.to_messages`` against ``convert_to_messages`` on one realistic list.

Codec: one typical model answer, encoded and decoded. The LangChain baseline the target
is judged against is its JSON round trip (``model_dump_json`` then
``model_validate_json``, both in pydantic-core): like ours, it goes to bytes and comes
back as a validated message. Two cheaper paths are reported for context: the dict round
trip (``model_dump``/``model_validate``, no bytes at all, so no wire format) and
``pickle`` (bytes, but not a format another process or version can safely read).
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Final

from langchain_core.messages import AIMessage, convert_to_messages

from bench.common.checks import Check, same_state
from bench.common.inputs import thread, typical_ai
from bench.common.timing import Case, Repeats, interleaved
from threadfold import core
from threadfold.core.codec import decode_message, encode_message

OURS: Final = "ours"


@dataclass(frozen=True)
class Comparison:
    """Ours against one or more LangChain paths; ``baseline`` is the one the target uses."""

    name: str
    operations: int
    baseline: str
    best_s: dict[str, float]
    median_s: dict[str, float]
    rounds: int
    check: Check

    def rate(self, name: str) -> float:
        """Operations per second, from the best run."""
        return self.operations / self.best_s[name]

    def speedup(self, name: str) -> float:
        """How many times faster ours was than ``name`` (best runs)."""
        return self.best_s[name] / self.best_s[OURS]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ops_per_s"] = {name: self.rate(name) for name in self.best_s}
        data["speedup_vs"] = {name: self.speedup(name) for name in self.best_s if name != OURS}
        return data


def _compare(name: str, operations: int, baseline: str, cases: dict[str, Case[Any]], *,
             repeats: Repeats, check: Callable[[dict[str, Any]], Check]) -> Comparison:
    outcome = interleaved(cases, repeats)
    timings = outcome.timings
    return Comparison(
        name=name,
        operations=operations,
        baseline=baseline,
        best_s={n: t.best for n, t in timings.items()},
        median_s={n: t.median for n, t in timings.items()},
        rounds=len(timings[OURS].seconds),
        check=check(outcome.results),
    )


def conversion(items: int, repeats: Repeats, seed: int) -> Comparison:
    """``items`` realistic dicts converted in one call, each side its own copy."""
    ours_dicts = thread(items, random.Random(seed))
    lc_dicts = thread(items, random.Random(seed))
    cases: dict[str, Case[Any]] = {
        OURS: lambda: lambda: core.to_messages(ours_dicts),
        "convert_to_messages": lambda: lambda: convert_to_messages(lc_dicts),
    }

    def check(results: dict[str, Any]) -> Check:
        name = f"to_messages of {items:,} dicts"
        return same_state(name, results[OURS], results["convert_to_messages"])

    return _compare(f"convert {items:,} dicts", items, "convert_to_messages", cases,
                    repeats=repeats, check=check)


def _loop(trip: Callable[[], Any], times: int) -> Case[Any]:
    def run() -> Any:
        result = None
        for _ in range(times):
            result = trip()
        return result

    return lambda: run


def codec(round_trips: int, repeats: Repeats, seed: int) -> Comparison:
    """Encode+decode of one typical AI message, ``round_trips`` times per run."""
    theirs = AIMessage(**typical_ai(seed))
    ours = core.to_message(theirs)
    cases: dict[str, Case[Any]] = {
        OURS: _loop(lambda: decode_message(encode_message(ours)), round_trips),
        "langchain_json": _loop(
            lambda: AIMessage.model_validate_json(theirs.model_dump_json()), round_trips),
        "langchain_dict": _loop(
            lambda: AIMessage.model_validate(theirs.model_dump()), round_trips),
        # Our own bytes, just made: the usual objection to unpickling does not apply.
        "pickle": _loop(lambda: pickle.loads(pickle.dumps(theirs)), round_trips),  # noqa: S301
    }

    def check(results: dict[str, Any]) -> Check:
        name = "codec round trips give the original message"
        if results[OURS] != ours:
            return Check(name, False, "our decode(encode(m)) != m")
        others = [results[n] for n in cases if n != OURS]
        if any(other != theirs for other in others):
            return Check(name, False, "a LangChain round trip changed the message")
        return same_state(name, [results[OURS]], [theirs], *([o] for o in others))

    return _compare("msgpack round trip, typical AI message", round_trips, "langchain_json",
                    cases, repeats=repeats, check=check)
