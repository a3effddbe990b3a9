"""The messages users send: LangChain/OpenAI message-likes as agent frameworks emit them.

Pure functions of a ``random.Random``: chat turns, assistant tool calls with their
results, edits and removals of earlier messages by id, streamed chunks of one run id,
and the rare ``__remove_all__``. Some messages carry client ids, some are left for the
server to stamp (their ids come back in the answer and are learned in an :class:`IdBook`).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

REMOVE_ALL = "__remove_all__"
_TEXT = (
    "the agent checked the order status and found a delayed shipment so it drafted a reply "
    "with the tracking link a refund option and an apology then asked the planner whether "
    "to escalate while the retriever pulled three policy documents about late deliveries"
)
_WORDS = _TEXT.split(" ")
_TOOLS = ["search_orders", "get_weather", "lookup_policy", "run_sql", "send_email"]
_BOOK_SIZE = 64


def text(rng: random.Random, chars: int) -> str:
    """About ``chars`` characters of word-like text (sizes, not meaning, matter here)."""
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[: max(1, chars)]


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def chat(role: str, content: str, ident: str | None = None) -> dict[str, Any]:
    """An OpenAI-style role dict; without an id the server stamps one."""
    message: dict[str, Any] = {"role": role, "content": content}
    if ident is not None:
        message["id"] = ident
    return message


def turn(rng: random.Random, chars: int, tag: str) -> list[dict[str, Any]]:
    """A user message and the assistant's answer (ids sometimes client-given)."""
    ident = new_id(f"{tag}-m") if rng.random() < 0.5 else None
    return [
        chat("user", text(rng, chars), ident),
        chat("assistant", text(rng, chars), new_id(f"{tag}-m") if ident else None),
    ]


def tool_call(rng: random.Random, chars: int, tag: str) -> tuple[dict[str, Any], list[Any]]:
    """An assistant message with OpenAI ``tool_calls``, and the matching tool results."""
    calls, results = [], []
    for _ in range(rng.randint(1, 3)):
        call_id = new_id("call")
        arguments = json.dumps({"query": text(rng, 24), "limit": rng.randint(1, 20)})
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": rng.choice(_TOOLS), "arguments": arguments},
            }
        )
        results.append({"role": "tool", "tool_call_id": call_id, "content": text(rng, chars)})
    assistant = {"role": "assistant", "content": "", "tool_calls": calls, "id": new_id(f"{tag}-a")}
    return assistant, results


def chunks(rng: random.Random, chars: int, count: int) -> list[dict[str, Any]]:
    """Streamed chunks of one run: the same id ``count`` times, growing content."""
    run_id = new_id("run")
    step = max(1, chars // max(1, count))
    so_far = ""
    out = []
    for _ in range(count):
        so_far += text(rng, step)
        out.append({"type": "AIMessageChunk", "content": so_far, "id": run_id})
    return out


def edit(rng: random.Random, chars: int, ident: str, role: str) -> dict[str, Any]:
    """A replacement, by id, of an earlier user or assistant message."""
    return chat(role, "(edited) " + text(rng, chars), ident)


def removal(ident: str) -> dict[str, Any]:
    return {"type": "remove", "id": ident, "content": ""}


def editable_role(message: Any) -> str | None:
    """The role of a message that may later be edited (plain user/assistant text)."""
    if not isinstance(message, dict) or message.get("tool_calls"):
        return None
    role = message.get("role")
    return role if role in {"user", "assistant"} else None


@dataclass
class IdBook:
    """Recent ids of each thread's editable messages, to aim edits and removals at."""

    ids: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def learn(self, thread_id: str, messages: Sequence[Any], ids: Sequence[str]) -> None:
        known = self.ids.setdefault(thread_id, [])
        for message, ident in zip(messages, ids, strict=True):
            role = editable_role(message)
            if role is not None:
                known.append((ident, role))
        del known[:-_BOOK_SIZE]  # recent ones: agents edit what they just wrote

    def pick(self, rng: random.Random, thread_id: str) -> tuple[str, str] | None:
        known = self.ids.get(thread_id)
        return rng.choice(known) if known else None

    def forget(self, thread_id: str, ident: str | None = None) -> None:
        """Drop one id (removed), or every id of the thread (``__remove_all__``)."""
        known = self.ids.get(thread_id, [])
        known[:] = [] if ident is None else [k for k in known if k[0] != ident]
