"""Benchmark inputs: realistic message dicts, and the reducer workloads built from them.

Every input is a deterministic function of its seed, and is plain JSON-shaped dicts:
both sides of a comparison are built from the same dicts (LangChain objects for
LangGraph, our Structs for us), so they see the same logical messages.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

Dict = dict[str, Any]
T = TypeVar("T")

_WORDS: Final = (
    "the", "thread", "tool", "weather", "reply", "search", "result", "Paris", "token",
    "model", "answer", "delta", "forecast", "rain", "sunny", "city", "degrees", "today",
)
_TOOLS: Final = ("get_weather", "search_web", "lookup_order", "send_email")


def _corpus(size: int) -> str:
    rng = random.Random(0)
    return " ".join(rng.choice(_WORDS) for _ in range(size // 6))


_CORPUS: Final = _corpus(20_000)


def text(rng: random.Random, length: int) -> str:
    """``length`` characters of words (a random slice of one fixed text: cheap to make)."""
    start = rng.randrange(len(_CORPUS) - length)
    return _CORPUS[start : start + length]


def new_id(rng: random.Random) -> str:
    """A uuid4-shaped id, as LangGraph stamps them."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _args(rng: random.Random) -> Dict:
    return {"query": text(rng, 24), "limit": rng.randrange(1, 20)}


def _openai_call(rng: random.Random, call_id: str) -> Dict:
    arguments = json.dumps(_args(rng))
    function = {"name": rng.choice(_TOOLS), "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def _langchain_call(rng: random.Random, call_id: str) -> Dict:
    return {"name": rng.choice(_TOOLS), "args": _args(rng), "id": call_id, "type": "tool_call"}


def _metadata(rng: random.Random, reason: str) -> Dict:
    return {"model_name": "gpt-4o-2024-08-06", "finish_reason": reason,
            "system_fingerprint": f"fp_{rng.getrandbits(32):08x}"}


def message_dict(i: int, rng: random.Random) -> Dict:
    """Message ``i`` of a conversation, in one of the forms clients really send.

    OpenAI role dicts (user, assistant with a tool call, tool result, plain assistant)
    alternate with flat LangChain ``type`` dicts (human, ai with a tool call and
    metadata, tool result with a status, ai); message 0 is a system prompt.
    """
    ident = new_id(rng)
    call = f"call_{i - 1:06d}"
    if i == 0:
        return {"role": "system", "content": text(rng, 300), "id": ident}
    kind = i % 8
    if kind == 0:
        return {"role": "user", "content": text(rng, 80), "id": ident}
    if kind == 1:
        calls = [_openai_call(rng, f"call_{i:06d}")]
        return {"role": "assistant", "content": "", "tool_calls": calls, "id": ident}
    if kind == 2:
        return {"role": "tool", "content": text(rng, 400), "tool_call_id": call, "id": ident}
    if kind == 3:
        return {"role": "assistant", "content": text(rng, 200), "id": ident}
    if kind == 4:
        return {"type": "human", "content": text(rng, 80), "id": ident}
    if kind == 5:
        return {"type": "ai", "content": "", "tool_calls": [_langchain_call(rng, f"call_{i:06d}")],
                "response_metadata": _metadata(rng, "tool_calls"), "id": ident}
    if kind == 6:
        return {"type": "tool", "content": text(rng, 400), "tool_call_id": call,
                "status": "success", "id": ident}
    return {"type": "ai", "content": text(rng, 200), "response_metadata": _metadata(rng, "stop"),
            "id": ident}


def thread(n: int, rng: random.Random, start: int = 0) -> list[Dict]:
    """Messages ``start`` .. ``start + n - 1`` of a conversation."""
    return [message_dict(i, rng) for i in range(start, start + n)]


def edited(message: Dict, rng: random.Random) -> Dict:
    """The same message (same id, same form) with new content."""
    return {**message, "content": text(rng, 120)}


def removal(ident: str) -> Dict:
    """A remove, in the flat dict form both converters accept."""
    return {"type": "remove", "content": "", "id": ident}


@dataclass(frozen=True)
class Workload:
    """A thread to start from and the deltas folded into it, in order."""

    name: str
    initial: list[Dict]
    deltas: list[Dict]


def appends(n: int, seed: int) -> Workload:
    """An empty thread growing to ``n`` messages."""
    return Workload(f"append N={n:,}", [], thread(n, random.Random(seed)))


def updates(length: int, count: int, seed: int) -> Workload:
    """``count`` edits (same id, new content) of random messages of a ``length`` thread."""
    rng = random.Random(seed)
    initial = thread(length, rng)
    deltas = [edited(initial[rng.randrange(length)], rng) for _ in range(count)]
    return Workload(f"update {count:,} into {length:,}", initial, deltas)


def mix(length: int, count: int, seed: int) -> Workload:
    """``count`` deltas, 70% appends, 20% edits, 10% removes of ids that exist then."""
    rng = random.Random(seed)
    initial = thread(length, rng)
    live = {m["id"]: m for m in initial}
    order = list(live)  # for O(1) random picks; removes swap the last id into the hole
    slot = {ident: i for i, ident in enumerate(order)}
    deltas: list[Dict] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.7 or not order:
            message = message_dict(length + len(deltas), rng)
            live[message["id"]] = message
            slot[message["id"]] = len(order)
            order.append(message["id"])
            deltas.append(message)
        elif roll < 0.9:
            ident = order[rng.randrange(len(order))]
            live[ident] = edited(live[ident], rng)
            deltas.append(live[ident])
        else:
            ident = order[rng.randrange(len(order))]
            last = order.pop()
            if last != ident:
                order[slot[ident]] = last
                slot[last] = slot[ident]
            del slot[ident], live[ident]
            deltas.append(removal(ident))
    return Workload(f"mix {count:,} into {length:,}", initial, deltas)


def batches(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` in consecutive batches of ``size`` (the last may be shorter)."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def typical_ai(seed: int) -> Dict:
    """Constructor kwargs of a typical model answer: 200 characters, one tool call, usage."""
    rng = random.Random(seed)
    usage = {"input_tokens": 1843, "output_tokens": 96, "total_tokens": 1939,
             "input_token_details": {"cache_read": 1536},
             "output_token_details": {"reasoning": 0}}
    return {"content": text(rng, 200), "tool_calls": [_langchain_call(rng, "call_Xq2b9T")],
            "usage_metadata": usage, "response_metadata": _metadata(rng, "tool_calls"),
            "id": f"run-{new_id(rng)}"}
