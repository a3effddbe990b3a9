"""The direct clients: settings from the environment or given, wake-ups batched without
the caller choosing a waker, and Redis out of reach raised as Unavailable, no secret in
sight."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.client.conftest import Stack
from tests.client.kinds import new_thread
from tests.infra.ports import free_port
from tests.workers.harness import WORKERS_ONLY, CountingWaker
from threadfold import (
    AsyncClient,
    Change,
    Client,
    ClientClosed,
    InvalidInput,
    Snapshot,
    Transcript,
    Unavailable,
)
from threadfold.workers.feed import subscription
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.wiring import CONNECTION_NAME

WAIT = 20.0
CALLERS, CALLS = 4, 50  # one-delta appends from each of several callers


def test_one_delta_per_call_from_several_threads_takes_few_celery_tasks(stack: Stack) -> None:
    """The shape the client is made for (request threads, agent loops): every call's
    thread is woken, by far fewer publishes than calls, and every state arrives."""
    app = make_celery(stack.settings)
    counting = CountingWaker(CeleryWaker(app, stack.settings.queue))
    # A wider window than the default 5 ms, only so that a loaded machine's slow calls
    # still share publishes: the point is that the client batches without being asked.
    workers_only = stack.settings.model_copy(update=WORKERS_ONLY)
    client = Client(settings=workers_only, waker=counting, wake_window=0.05)
    threads = [[new_thread() for _ in range(CALLS)] for _ in range(CALLERS)]
    versions: dict[str, str] = {}

    def caller(mine: list[str]) -> None:
        for thread in mine:  # a thread of its own per call: each call sets a wake-up flag
            versions[thread] = client.append(thread, [f"hello {thread}"]).version

    try:
        running = [threading.Thread(target=caller, args=(mine,)) for mine in threads]
        for t in running:
            t.start()
        for t in running:
            t.join()
        for thread, version in versions.items():
            state = client.state(thread, min_version=version, wait=WAIT)
            assert [m["content"] for m in state.messages] == [f"hello {thread}"]
    finally:
        client.close()
        app.close()
    assert counting.sent == CALLERS * CALLS  # every thread woken, once
    assert counting.publishes <= CALLERS * CALLS // 4, counting.publishes  # one per call: all


def test_asyncio_callers_share_publishes_too(stack: Stack) -> None:
    """Concurrent callers' appends share round trips (one per loop turn: CALLS of them
    here, each waking CALLERS threads); their wake-ups share publishes besides."""
    app = make_celery(stack.settings)
    counting = CountingWaker(CeleryWaker(app, stack.settings.queue))

    async def run() -> None:
        workers_only = stack.settings.model_copy(update=WORKERS_ONLY)
        async with AsyncClient(settings=workers_only, waker=counting, wake_window=0.2) as c:

            async def caller() -> list[tuple[str, str]]:
                done = []
                for _ in range(CALLS):  # one call after another, as an agent loop makes
                    thread = new_thread()
                    done.append((thread, (await c.append(thread, ["hi"])).version))
                return done

            results = await asyncio.gather(*(caller() for _ in range(CALLERS)))
            for thread, version in (pair for done in results for pair in done):
                state = await c.state(thread, min_version=version, wait=WAIT)
                assert [m["content"] for m in state.messages] == ["hi"]

    try:
        asyncio.run(run())
    finally:
        app.close()
    assert counting.sent == CALLERS * CALLS
    assert counting.publishes <= CALLS // 2, counting.publishes  # one per round trip: CALLS


def test_settings_come_from_the_environment_or_the_arguments(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in settings_env(stack.settings).items():
        monkeypatch.setenv(name, value)
    thread = new_thread()
    with Client() as client:  # THREADFOLD_* as the rest of the stack reads them
        done = client.append(thread, ["from the environment"])
    nowhere = f"redis://127.0.0.1:{free_port()}/0"
    monkeypatch.setenv("THREADFOLD_REDIS_URL", nowhere)
    monkeypatch.setenv("THREADFOLD_BROKER_URL", nowhere)
    with Client(redis_url=stack.redis.url, broker_url=stack.redis.url) as client:
        state = client.state(thread, min_version=done.version, wait=WAIT)  # woken and read
    assert [m["content"] for m in state.messages] == ["from the environment"]
    with Client() as client, pytest.raises(Unavailable):
        client.status(thread)  # the environment's URL now: nothing there


@pytest.mark.parametrize("kind", ["Client", "AsyncClient"])
def test_redis_out_of_reach_is_unavailable_and_no_password_shows(kind: str, stack: Stack) -> None:
    url = f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0"
    settings = stack.settings
    if kind == "Client":
        client = Client(url, url, settings=settings)
        shown = repr(client)
        with pytest.raises(Unavailable) as caught:
            client.append(new_thread(), ["x"])
        client.close()
    else:

        async def attempt() -> tuple[str, pytest.ExceptionInfo[Unavailable]]:
            async with AsyncClient(url, url, settings=settings) as aclient:
                with pytest.raises(Unavailable) as raised:
                    await aclient.append(new_thread(), ["x"])
                return repr(aclient), raised

        shown, caught = asyncio.run(attempt())
    error = caught.value
    assert (error.status, error.code, error.retry_after) == (503, "unavailable", 1.0)
    text = f"{shown} {error!s} {error!r} {error.__cause__!s}"
    assert "hunter2" not in text


def test_a_bad_tenant_or_window_is_refused_by_name(stack: Stack) -> None:
    with pytest.raises(InvalidInput) as caught:
        Client(settings=stack.settings, tenant="no spaces")
    assert caught.value.field == "tenant"
    with pytest.raises(InvalidInput) as caught:
        AsyncClient(settings=stack.settings, wake_window=-1)
    assert caught.value.field == "wake_window"


def test_asyncio_subscriptions_share_one_connection_and_close_ends_them(stack: Stack) -> None:
    """An AsyncClient follows all its threads on one Pub/Sub connection (the API's hub),
    each subscription getting its own thread's events; close() ends every subscription
    (ClientClosed) and lets go of the connection, promptly."""
    threads = [new_thread() for _ in range(20)]

    def pubsub_channels() -> list[int]:
        """The channels of each of the clients' connections in Pub/Sub mode."""
        with stack.redis.probe() as admin:
            listed = admin.client_list()
        return [int(c["sub"]) for c in listed if c["name"] == CONNECTION_NAME and int(c["sub"])]

    async def run() -> None:
        client = AsyncClient(settings=stack.settings)
        streams = [client.subscribe(t) for t in threads]
        for stream in streams:
            assert isinstance(await anext(stream), Snapshot)
        for t in threads:
            await client.append(t, [f"hello {t}"])
        for t, stream in zip(threads, streams, strict=True):
            change = await asyncio.wait_for(anext(stream), WAIT)
            assert isinstance(change, Change)
            assert [u.message["content"] for u in change.upserts] == [f"hello {t}"]
        assert await asyncio.to_thread(pubsub_channels) == [20]
        await streams[1].aclose()  # type: ignore[attr-defined]  # leaving one ends it
        async with asyncio.timeout(WAIT):
            while await asyncio.to_thread(pubsub_channels) != [19]:
                await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(anext(streams[0]))
        await asyncio.wait_for(client.close(), WAIT)
        with pytest.raises(ClientClosed):
            await asyncio.wait_for(waiting, WAIT)
        assert await asyncio.to_thread(pubsub_channels) == []

    asyncio.run(run())


def test_an_asyncio_subscription_left_unread_is_resumed_with_nothing_lost(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscription that falls its queue's length behind is ended by the hub and
    resumed from the version it had yielded. Its backlog, as long as the queue, comes as
    one snapshot (resume_gap): as events it would overflow the queue again, for ever
    (it did). Every event applies on the version before it (Transcript checks)."""
    monkeypatch.setattr(subscription, "QUEUE_EVENTS", 2)
    thread = new_thread()

    async def run() -> None:
        async with AsyncClient(settings=stack.settings) as client:
            stream = client.subscribe(thread)
            transcript = Transcript()
            transcript.apply(await anext(stream))
            last = ""
            for i in range(8):  # one version each: the queue holds 2
                last = (await client.append(thread, [f"m{i}"])).version
                await client.wait_for(thread, last, WAIT)
            reasons = []
            while transcript.version != last:  # apply() refuses a change off the chain
                event = await asyncio.wait_for(anext(stream), WAIT)
                transcript.apply(event)
                reasons += [event.reason] if isinstance(event, Snapshot) else []
            assert reasons == ["resume_gap"]
            state = await client.state(thread)
            assert transcript.messages == state.messages
            assert [m["content"] for m in state.messages] == [f"m{i}" for i in range(8)]

    asyncio.run(run())
