"""A short multi-agent conversation, written as deltas and read back merged.

It shows what threadfold does with each kind of delta: appends from several agents,
OpenAI tool calls and their results, an update of a message by id, a removal, and a
burst of streamed chunks that the final answer replaces by id.
"""

from __future__ import annotations

import json
import time
from typing import Any

from threadfold.core import dump_messages
from threadfold.core.versions import reached
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.storage.store import Store

THREAD = "demo"

STEPS: list[tuple[str, list[Any]]] = [
    (
        "the user asks",
        [
            {
                "role": "system",
                "content": "You are a travel team: a researcher and a writer.",
                "id": "sys",
            },
            {"role": "user", "content": "What's the weather in Paris and Rome?", "id": "q1"},
        ],
    ),
    (
        "the researcher calls two tools",
        [
            {
                "role": "assistant",
                "name": "researcher",
                "content": "",
                "id": "r1",
                "tool_calls": [
                    {
                        "id": "call_paris",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_rome",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                    },
                ],
            },
        ],
    ),
    (
        "the tools answer",
        [
            {"role": "tool", "tool_call_id": "call_paris", "content": "sunny, 21C", "id": "t1"},
            {"role": "tool", "tool_call_id": "call_rome", "content": "rain, 17C", "id": "t2"},
        ],
    ),
    (
        "the researcher leaves a scratch note",
        [
            {
                "role": "assistant",
                "name": "researcher",
                "content": "(scratch: compare both)",
                "id": "scratch",
            },
        ],
    ),
    (
        "the user corrects the question (update by id)",
        [
            {"role": "user", "content": "What's the weather in Paris and Rome today?", "id": "q1"},
        ],
    ),
    ("the scratch note is removed", [{"type": "remove", "id": "scratch", "content": ""}]),
    (
        "the writer streams its answer (chunks of one id)",
        [{"type": "AIMessageChunk", "name": "writer", "content": "Paris is sun", "id": "w1"}],
    ),
    ("", [{"type": "AIMessageChunk", "name": "writer", "content": "ny (21C); ", "id": "w1"}]),
    ("", [{"type": "AIMessageChunk", "name": "writer", "content": "Rome is rainy.", "id": "w1"}]),
    (
        "the final answer replaces the chunks (same id)",
        [
            {
                "role": "assistant",
                "name": "writer",
                "id": "w1",
                "content": "Paris is sunny (21C); Rome is rainy (17C). Pack an umbrella for Rome.",
            },
        ],
    ),
]


def run(producer: Producer, store: Store, api_url: str, echo: Any = print) -> list[dict[str, Any]]:
    """Write the conversation, wait until it is applied, print and return the state."""
    last = ""
    for title, messages in STEPS:
        result = producer.enqueue(THREAD, messages)
        last = result.version
        if title:
            echo(f"  + {title:<52} version {result.version}")
    ref = f"_/{THREAD}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = store.status(ref)
        if status is not None and status.backlog == 0 and reached(status.version, last):
            break
        time.sleep(0.05)
    page = store.read_state(ref)
    state = [] if page is None else _compact(page.messages)
    echo(f"\nMerged state of thread {THREAD!r} at version {page.version if page else '?'}:")
    for message in state:
        echo("  " + json.dumps(message, ensure_ascii=False))
    echo(
        f"\nRead it over HTTP:\n  curl -s {api_url}/threads/{THREAD}/state\n"
        f"  curl -s '{api_url}/threads/{THREAD}/state?format=openai'"
    )
    return state


def _compact(messages: list[Any]) -> list[dict[str, Any]]:
    out = []
    for message in dump_messages(messages):
        out.append({k: v for k, v in message.items() if v not in (None, {}, [])})
    return out
