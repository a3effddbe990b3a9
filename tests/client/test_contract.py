"""The clients' contract: one set of tests, run against each kind of client (direct sync
and asyncio, HTTP sync and asyncio) over the real stack. Every kind must give the same
results and raise the same exceptions, field and pointer included."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.client.conftest import Stack
from tests.client.kinds import DIRECT, KINDS, new_thread, open_client
from tests.client.proxy import Proxy
from tests.infra.processes import wait_until
from threadfold import (
    ClientClosed,
    ClientProtocol,
    Conflict,
    InvalidInput,
    NotFound,
    RequestError,
    State,
    VersionNotReached,
)
from threadfold.core import dump_messages
from threadfold.core.depth import pointer as api_pointer
from threadfold.core.openai import to_openai
from threadfold.testing import stamped, version_key
from threadfold.workers.wiring import CONNECTION_NAME

WAIT = 20.0  # seconds a read-your-writes read may wait for the worker

CONVERSATION: list[Any] = [
    {"role": "user", "content": "what is 6 x 7?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "function": {"name": "mul", "arguments": '{"a": 6, "b": 7}'}}],
    },
    {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ("ai", "6 x 7 = 42"),
]


def expected(messages: list[Any], ids: tuple[str, ...]) -> list[dict[str, Any]]:
    """The messages as the state serves them (LangChain's model_dump form), ids stamped."""
    return dump_messages(stamped(messages, ids))


def test_an_append_is_read_back_with_min_version(client: ClientProtocol) -> None:
    thread = new_thread()
    done = client.append(thread, CONVERSATION)
    assert done.thread_id == thread and done.accepted == 4 and not done.duplicate
    state = client.state(thread, min_version=done.version, wait=WAIT)
    assert version_key(state.version) >= version_key(done.version)
    assert state.messages == expected(CONVERSATION, done.ids)
    assert (state.thread_id, state.total, state.has_more, state.format) == (
        thread,
        4,
        False,
        "langchain",
    )


def test_ids_are_stamped_on_id_less_messages_and_returned(client: ClientProtocol) -> None:
    thread = new_thread()
    done = client.append(thread, ["no id", {"role": "user", "content": "mine", "id": "m-1"}])
    assert len(done.ids) == 2 and done.ids[1] == "m-1" and done.ids[0] not in ("", "m-1")
    state = client.state(thread, min_version=done.version, wait=WAIT)
    assert [m["id"] for m in state.messages] == list(done.ids)
    # an update by the stamped id replaces the message in place
    again = client.append(thread, [{"role": "user", "content": "edited", "id": done.ids[0]}])
    state = client.state(thread, min_version=again.version, wait=WAIT)
    assert [m["content"] for m in state.messages] == ["edited", "mine"]


def test_a_repeated_delta_id_is_answered_as_the_first_and_applied_once(
    client: ClientProtocol,
) -> None:
    thread = new_thread()
    first = client.append(thread, ["once"], delta_id="req-1")
    second = client.append(thread, ["once"], delta_id="req-1")
    assert not first.duplicate and second.duplicate
    assert (second.version, second.ids) == (first.version, first.ids)
    later = client.append(thread, ["after"])
    state = client.state(thread, min_version=later.version, wait=WAIT)
    assert [m["content"] for m in state.messages] == ["once", "after"]


@dataclass(frozen=True)
class Item:
    """A delta as an object of the caller's own."""

    thread_id: str
    messages: list[Any]
    delta_id: str | None = None


def test_append_many_takes_pairs_triples_mappings_and_objects(client: ClientProtocol) -> None:
    a, b = new_thread(), new_thread()
    results = client.append_many(
        [
            (a, ["a1"]),
            Item(b, ["b1"], delta_id="b-1"),
            {"thread_id": a, "messages": [("ai", "a2")]},
            (b, ["b2"], "b-2"),
            Item(b, ["b1"], delta_id="b-1"),  # a retry within the call: answered, not applied
        ]
    )
    assert [r.thread_id for r in results] == [a, b, a, b, b]
    assert [r.duplicate for r in results] == [False, False, False, False, True]
    assert results[4].version == results[1].version and results[4].ids == results[1].ids
    for thread, items in ((a, [results[0], results[2]]), (b, [results[1], results[3]])):
        last = max((r.version for r in items), key=version_key)
        state = client.state(thread, min_version=last, wait=WAIT)
        assert [m["id"] for m in state.messages] == [r.ids[0] for r in items]
    assert client.append_many([]) == []


def test_a_stream_of_bulks_is_appended_in_order(client: ClientProtocol) -> None:
    """A bulk load through the client: bulk after bulk, each one's results as its
    append_many's, every thread's deltas in the order the stream had them, and the
    stream read lazily (a generator the client pulls from as it goes)."""
    threads = [new_thread() for _ in range(3)]
    pulled: list[int] = []

    def bulks() -> Any:
        for k in range(6):
            pulled.append(k)
            yield [
                (t, [f"{t}-{k}"], f"{t}-{k}") if k % 2 else Item(t, [f"{t}-{k}"])
                for t in threads
            ]

    answered = []
    for k, results in enumerate(client.append_stream(bulks())):
        assert [r.thread_id for r in results] == threads
        assert pulled[-1] <= k + 1  # read as the stream goes, at most one bulk ahead
        answered.append(results)
    assert len(answered) == 6
    for i, thread in enumerate(threads):
        last = max((bulk[i].version for bulk in answered), key=version_key)
        state = client.state(thread, min_version=last, wait=WAIT)
        assert [m["content"] for m in state.messages] == [f"{thread}-{k}" for k in range(6)]
        assert [m["id"] for m in state.messages] == [bulk[i].ids[0] for bulk in answered]


def test_a_bad_bulk_of_a_stream_is_refused_as_the_streams(client: ClientProtocol) -> None:
    """The bulks before a bad one are appended and yielded; the bad one is refused whole,
    located as ``bulks[k]...``; nothing of it is written."""
    good, bad = new_thread(), new_thread()
    stream: list[Any] = [
        [(good, ["one"])],
        [(good, ["two"]), (bad, [{"role": "tool", "content": "no id"}])],
    ]
    answered = []
    with pytest.raises(InvalidInput) as caught:
        for results in client.append_stream(stream):
            answered.append(results)
    assert len(answered) == 1
    assert caught.value.field is not None
    assert caught.value.field.startswith("bulks[1].deltas[1].messages[0]")
    assert str(caught.value).startswith("bulks[1].deltas[1].messages[0]")
    state = client.state(good, min_version=answered[0][0].version, wait=WAIT)
    assert [m["content"] for m in state.messages] == ["one"]
    with pytest.raises(NotFound):
        client.status(bad)
    with pytest.raises(InvalidInput) as caught:
        list(client.append_stream([[("t", ["x"])], "not a bulk"]))  # type: ignore[list-item]
    assert caught.value.field == "bulks[1].deltas"


def test_the_openai_format(client: ClientProtocol) -> None:
    thread = new_thread()
    done = client.append(thread, CONVERSATION)
    state = client.state(thread, min_version=done.version, wait=WAIT, format="openai")
    assert state.format == "openai"
    assert state.messages == to_openai(stamped(CONVERSATION, done.ids))
    assert state.messages[0] == {"role": "user", "content": "what is 6 x 7?"}


def test_pages_after_and_before_a_message(client: ClientProtocol) -> None:
    thread = new_thread()
    done = client.append(
        thread, [{"role": "user", "content": str(i), "id": f"m{i}"} for i in range(5)]
    )
    client.wait_for(thread, done.version, WAIT)

    def page(**query: Any) -> tuple[list[str], bool, int]:
        found = client.state(thread, **query)
        return [m["id"] for m in found.messages], found.has_more, found.total

    assert page(limit=2) == (["m0", "m1"], True, 5)
    assert page(limit=2, after="m1") == (["m2", "m3"], True, 5)
    assert page(limit=2, after="m3") == (["m4"], False, 5)
    assert page(limit=2, before="m3") == (["m1", "m2"], True, 5)
    assert page(limit=0) == ([], True, 5)
    assert page() == ([f"m{i}" for i in range(5)], False, 5)
    with pytest.raises(InvalidInput) as caught:
        client.state(thread, after="nope")
    assert (caught.value.status, caught.value.field, caught.value.pointer) == (
        422,
        "after",
        "/after",
    )


def test_status_of_a_drained_thread(client: ClientProtocol) -> None:
    thread = new_thread()
    done = client.append(thread, ["a", "b"])
    client.wait_for(thread, done.version, WAIT)
    status = client.status(thread)
    assert (status.thread_id, status.version, status.last_enqueued) == (
        thread,
        done.version,
        done.version,
    )
    assert (status.backlog, status.messages, status.quarantined) == (0, 2, False)
    assert status.quarantine_reason is None and status.attempts == 0


def test_the_threads_list_leads_with_the_latest_thread(client: ClientProtocol) -> None:
    thread = new_thread()
    done = client.append(thread, ["a", "b"])
    client.wait_for(thread, done.version, WAIT)
    [latest] = client.threads(limit=1).threads
    assert (latest.thread_id, latest.version, latest.messages) == (thread, done.version, 2)
    assert client.threads(limit=0).threads == ()
    with pytest.raises(InvalidInput) as caught:
        client.threads(limit=10_000)
    assert caught.value.field == "limit"


def test_a_deleted_thread_is_not_found(client: ClientProtocol) -> None:
    thread = new_thread()
    done = client.append(thread, ["x"])
    client.wait_for(thread, done.version, WAIT)
    client.delete(thread)
    calls: list[Callable[[], object]] = [
        lambda: client.state(thread),
        lambda: client.status(thread),
        lambda: client.delete(thread),
        lambda: client.wait_for(thread, done.version, 1),
        lambda: client.state(thread, at_version=done.version),
    ]
    for call in calls:
        with pytest.raises(NotFound) as caught:
            call()
        error = caught.value
        assert (error.status, error.code, error.field, error.pointer) == (
            404,
            "not_found",
            "thread_id",
            "/thread_id",
        )
        assert str(error) == f"thread {thread!r} has never been written"


#: (call, status, code, field, pointer): the API's answer to each, which every kind raises.
INVALID: list[tuple[str, Any, int, str, str | None]] = [
    (
        "tool message without its call",
        lambda c, t: c.append(t, [{"role": "tool", "content": "x"}]),
        422,
        "invalid",
        "messages[0].tool_call_id",
    ),
    (
        "unknown role",
        lambda c, t: c.append(t, ["ok", {"role": "critic", "content": "x"}]),
        422,
        "invalid",
        "messages[1].type",
    ),
    (
        "bad tool call arguments",
        lambda c, t: c.append(
            t,
            [
                CONVERSATION[0],
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}],
                },
            ],
        ),
        422,
        "invalid",
        "messages[1].tool_calls[0].function.arguments",
    ),
    ("no messages", lambda c, t: c.append(t, []), 422, "invalid", "messages"),
    ("empty delta_id", lambda c, t: c.append(t, ["x"], delta_id=""), 422, "invalid", "delta_id"),
    ("bad thread id", lambda c, t: c.append("a/b", ["x"]), 422, "invalid", "thread_id"),
    ("bad thread id in a read", lambda c, t: c.state("no spaces"), 422, "invalid", "thread_id"),
    (
        "a bad delta of many",
        lambda c, t: c.append_many([(t, ["ok"]), (t, [{"type": "remove", "content": ""}])]),
        422,
        "invalid",
        "deltas[1].messages[0].id",
    ),
    (
        "a bad thread id of many",
        lambda c, t: c.append_many([(t, ["ok"]), ("x y", ["ok"])]),
        422,
        "invalid",
        "deltas[1].thread_id",
    ),
    ("not a delta", lambda c, t: c.append_many([(t, ["ok"]), 42]), 422, "invalid", "deltas[1]"),
    ("unknown format", lambda c, t: c.state(t, format="xml"), 400, "bad_request", "format"),
    ("negative limit", lambda c, t: c.state(t, limit=-1), 400, "bad_request", "limit"),
    (
        "bad min_version",
        lambda c, t: c.state(t, min_version="v1"),
        400,
        "bad_request",
        "min_version",
    ),
    (
        "bad at_version",
        lambda c, t: c.state(t, at_version="1-2-3"),
        400,
        "bad_request",
        "at_version",
    ),
    (
        "negative wait",
        lambda c, t: c.state(t, min_version="1-0", wait=-1),
        400,
        "bad_request",
        "wait",
    ),
    ("empty after", lambda c, t: c.state(t, after=""), 400, "bad_request", "after"),
    (
        "endless wait",
        lambda c, t: c.state(t, min_version="1-0", wait=float("inf")),
        400,
        "bad_request",
        "wait",
    ),
    (
        "a version past 64 bits",
        lambda c, t: c.state(t, at_version="18446744073709551616-0"),
        400,
        "bad_request",
        "at_version",
    ),
    (
        "after and before",
        lambda c, t: c.state(t, after="a", before="b"),
        400,
        "bad_request",
        "before",
    ),
    (
        "bad version to wait for",
        lambda c, t: c.wait_for(t, "soon", 1),
        400,
        "bad_request",
        "version",
    ),
]


@pytest.mark.parametrize("case", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_input_names_its_field_and_nothing_is_appended(
    client: ClientProtocol, case: tuple[str, Any, int, str, str]
) -> None:
    _, call, status, code, field = case
    thread = new_thread()
    with pytest.raises(InvalidInput) as caught:
        call(client, thread)
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.status, error.code, error.field) == (status, code, field)
    assert error.pointer == api_pointer(field)  # the API's rule for its pointers
    assert str(error).startswith(f"{field}:") or field == "thread_id"
    with pytest.raises(NotFound):  # nothing of a refused call was appended
        client.status(thread)


def test_langchain_message_objects_are_taken_as_they_are(client: ClientProtocol) -> None:
    thread = new_thread()
    sent = [
        HumanMessage("what is 6 x 7?"),
        AIMessage("", tool_calls=[{"name": "mul", "args": {"a": 6, "b": 7}, "id": "c1"}]),
        ToolMessage("42", tool_call_id="c1", id="tool-1"),
        AIMessage("42", name="calc", response_metadata={"model": "m"}),
    ]
    done = client.append(thread, sent)
    assert done.ids[2] == "tool-1"
    state = client.state(thread, min_version=done.version, wait=WAIT)
    dumped = [
        m.model_copy(update={"id": i}).model_dump() for m, i in zip(sent, done.ids, strict=True)
    ]
    assert state.messages == dumped


def test_wait_for_returns_the_version_or_raises_version_not_reached(
    client: ClientProtocol,
) -> None:
    thread = new_thread()
    done = client.append(thread, ["x"])
    reached = client.wait_for(thread, done.version, WAIT)
    assert version_key(reached) >= version_key(done.version)
    far = "99999999999999-0"
    with pytest.raises(VersionNotReached) as caught:
        client.wait_for(thread, far, 0.05)
    error = caught.value
    assert isinstance(error, Conflict) and isinstance(error, TimeoutError)
    assert (error.status, error.code, error.version) == (409, "version_not_reached", reached)
    with pytest.raises(VersionNotReached):  # the same as a read with min_version
        client.state(thread, min_version=far, wait=0)
    with pytest.raises(NotFound):
        client.wait_for(new_thread(), done.version, 0.05)


@pytest.mark.parametrize("kind", KINDS)
def test_leaving_the_with_block_closes_the_client(
    kind: str, stack: Stack, runner: asyncio.Runner
) -> None:
    thread = new_thread()
    with Proxy(stack.api_url) as proxy, stack.redis.probe() as admin:

        def held() -> int:
            """The connections the client holds: at the proxy (HTTP), or named (direct)."""
            if kind in DIRECT:
                return sum(c["name"] == CONNECTION_NAME for c in admin.client_list())
            return proxy.open

        # No beat runs in the test stack (no sweeper): the delta read back below is
        # drained only if closing published its wake-up, which the window holds back.
        windows: dict[str, dict[str, Any]] = {
            "Client": {"wake_window": 3600.0},
            "AsyncClient": {"wake_window": 1.0},
        }
        options = windows.get(kind, {})
        with open_client(kind, stack.settings, proxy.url, runner, **options) as client:
            done = client.append(thread, ["x"])
            assert held() >= 1
        wait_until(lambda: held() == 0, 10, message="the client's connections stayed open")
        with pytest.raises(ClientClosed):
            client.append(thread, ["y"])
        with pytest.raises(ClientClosed):
            client.state(thread)
        client.close()  # a second close does nothing
    reader = open_client(kind, stack.settings, stack.api_url, runner)
    try:
        state = reader.state(thread, min_version=done.version, wait=WAIT)
    finally:
        reader.close()
    assert [m["content"] for m in state.messages] == ["x"]


def test_every_kind_reads_the_same_state(stack: Stack, runner: asyncio.Runner) -> None:
    """The direct clients' reads are the API's, to the byte of every field."""
    clients = [open_client(kind, stack.settings, stack.api_url, runner) for kind in KINDS]
    try:
        thread = new_thread()
        first = clients[0].append(thread, CONVERSATION)
        last = clients[2].append(thread, [{"role": "user", "content": "and 7 x 8?", "id": "q2"}])
        clients[0].wait_for(thread, max(first.version, last.version, key=version_key), WAIT)
        reads: list[dict[str, Any]] = [
            {},
            {"format": "openai"},
            {"limit": 2, "after": first.ids[0]},
            {"limit": 3, "before": "q2", "format": "openai"},
        ]
        for query in reads:
            states: list[State] = [c.state(thread, **query) for c in clients]
            assert all(s == states[0] for s in states), query
        statuses = [c.status(thread) for c in clients]
        assert all(s == statuses[0] for s in statuses)
        errors: list[RequestError] = []
        for c in clients:
            with pytest.raises(RequestError) as caught:
                c.state(thread, after="nope")
            errors.append(caught.value)
        shapes = {(type(e), e.status, e.code, str(e), e.field, e.pointer) for e in errors}
        assert len(shapes) == 1, shapes
    finally:
        for c in clients:
            c.close()
