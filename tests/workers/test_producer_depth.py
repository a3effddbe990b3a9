"""The producer refuses a message nested deeper than max_json_depth as an InvalidMessage
naming where, whatever the input's form and however deep: never a RecursionError, and
nothing of the call is appended. A message at the limit is stored, drained and read."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage as LcAIMessage

from tests.workers.harness import make_settings, state_dump, store_for
from tests.workers.test_ingest_groups import Woken
from threadfold.core.errors import InvalidMessage
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.runtime.drain import Drainer

DEEP = 5_000  # well past the interpreter's recursion limit (1,000)


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"k": value}
    return value


def _producer(redis_url: str, **overrides: Any) -> Producer:
    settings = make_settings(redis_url, **overrides)
    return Producer(store_for(settings).client, settings, Woken())


def _keys(producer: Producer) -> list[bytes]:
    client: Any = producer.client
    return [k for k in client.scan_iter() if not k.startswith(b"{tf:metrics}")]


CASES: list[tuple[str, Any, str]] = [
    # (what, message-like, the path of the error: the first object past level 10)
    (
        "additional_kwargs",
        {"role": "assistant", "content": "x", "additional_kwargs": {"k": _nested(DEEP)}},
        "messages[0].additional_kwargs" + ".k" * 9,
    ),
    (
        "a content block of a [role, content] pair",
        ["user", [{"type": "text", "text": "x", "k": _nested(DEEP)}]],
        "messages[0].content[0]" + ".k" * 8,
    ),
    (
        "a LangChain message object",
        LcAIMessage(content="x", response_metadata={"k": _nested(DEEP)}),
        "messages[0].response_metadata" + ".k" * 9,
    ),
    (
        "a tool call's parsed args",
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "name": "f", "args": _nested(DEEP)}],
        },
        "messages[0].tool_calls[0].args" + ".k" * 7,
    ),
    (
        "an OpenAI tool call's JSON arguments",
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"k":' * DEEP + "1" + "}" * DEEP},
                }
            ],
        },
        "messages[0].tool_calls[0].function.arguments",
    ),
]


@pytest.mark.parametrize(("what", "message", "path"), CASES, ids=[c[0] for c in CASES])
def test_a_message_nested_too_deeply_is_refused_where_it_is_too_deep(
    redis_url: str, what: str, message: Any, path: str
) -> None:
    producer = _producer(redis_url, max_json_depth=10)
    with pytest.raises(InvalidMessage) as caught:
        producer.enqueue_many([Delta("ok", ["fine"]), Delta("t", ["before", message])])
    assert caught.value.path == path.replace("messages[0]", "deltas[1].messages[1]"), what
    assert caught.value.path.startswith("deltas[1].messages[1].")
    assert _keys(producer) == []  # nothing of the bulk was appended


def test_the_limit_is_the_setting_and_a_message_at_it_is_stored_drained_and_read(
    redis_url: str,
) -> None:
    producer = _producer(redis_url, max_json_depth=12)
    # level 1 the message, 2-12 additional_kwargs and the ten objects inside it
    at_limit = {"role": "assistant", "content": "x", "additional_kwargs": _nested(11), "id": "m"}
    over = {**at_limit, "additional_kwargs": _nested(12)}
    with pytest.raises(InvalidMessage, match=r"nested deeper than 12 levels"):
        producer.enqueue("t", [over])
    producer.enqueue("t", [at_limit])
    store = store_for(producer.settings)
    Drainer(store, producer.settings).drain("_/t")
    [stored] = state_dump(store, "_/t")
    assert (stored["id"], stored["content"]) == ("m", "x")
    assert stored["additional_kwargs"] == _nested(11)
