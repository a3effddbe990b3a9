"""threadfold.langchain.ThreadfoldChatMessageHistory against the real stack (redis-server,
Celery worker process, API process), over each kind of client: LangChain's own
RunnableWithMessageHistory over its GenericFakeChatModel, read-your-writes, several
histories on one thread written at once, checked against the one-at-a-time fold."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from tests.client.conftest import Stack
from tests.client.kinds import TOKEN, new_thread
from tests.integrations.recording import AsyncRecording, Recorder, Recording
from tests.workers.harness import WORKERS_ONLY
from threadfold import (
    AsyncClient,
    AsyncHttpClient,
    Client,
    ClientProtocol,
    HttpClient,
    VersionNotReached,
)
from threadfold.langchain import ThreadfoldChatMessageHistory, to_langchain
from threadfold.workers.runtime.app import CeleryWaker, make_celery

WAIT = 20.0
SYNC = ["Client", "HttpClient"]
ASYNC = ["AsyncClient", "AsyncHttpClient"]

# LangChain deprecated RunnableWithMessageHistory (and BaseChatMessageHistory) for
# removal in 2.0; the extra's range stops before it. The warning is LangChain's own.
pytestmark = pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")

CONVERSATION: list[BaseMessage] = [
    SystemMessage("you multiply"),
    HumanMessage("what is 6 x 7?"),
    AIMessage("", tool_calls=[{"name": "mul", "args": {"a": 6, "b": 7}, "id": "c1"}]),
    ToolMessage("42", tool_call_id="c1"),
    AIMessageChunk(content="6 x 7 = ", id="streamed"),
    AIMessage("6 x 7 = 42", id="streamed"),
]


def sync_client(kind: str, stack: Stack) -> ClientProtocol:
    if kind == "Client":
        return Client(settings=stack.settings)
    return HttpClient(stack.api_url, TOKEN)


def async_client(kind: str, stack: Stack) -> AsyncClient | AsyncHttpClient:
    if kind == "AsyncClient":
        return AsyncClient(settings=stack.settings)
    return AsyncHttpClient(stack.api_url, TOKEN)


def dumped(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    assert all(isinstance(m, BaseMessage) for m in messages)
    return [m.model_dump() for m in messages]


class Answers:
    """The fake model's answers, "answer 0", "answer 1", ..., to any number of threads
    of execution at once (a generator would refuse a second caller)."""

    def __init__(self) -> None:
        self.count = itertools.count()
        self.lock = threading.Lock()

    def __iter__(self) -> Answers:
        return self

    def __next__(self) -> AIMessage:
        with self.lock:
            return AIMessage(f"answer {next(self.count)}")


def chain(history: Callable[[str], BaseChatMessageHistory], seen: list[int]) -> Runnable[Any, Any]:
    """A prompt with the history, LangChain's fake model (noting how many messages it
    was given), wrapped in RunnableWithMessageHistory."""

    def note(prompt: Any) -> Any:
        seen.append(len(prompt.to_messages()))
        return prompt

    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{input}")]
    )
    model = GenericFakeChatModel(messages=Answers())
    # history_messages_key: the history goes into the prompt, and only the input and
    # the answer are added after the run. Without it LangChain reads the history again
    # after the run and cuts the new messages by its length, which another writer of
    # the thread may have changed meanwhile.
    return RunnableWithMessageHistory(
        prompt | RunnableLambda(note) | model,
        history,
        input_messages_key="input",
        history_messages_key="history",
    )


@pytest.mark.parametrize("kind", SYNC)
def test_a_history_reads_back_what_it_added_as_langchain_messages(kind: str, stack: Stack) -> None:
    recorder, thread = Recorder(), new_thread()
    with Recording(sync_client(kind, stack), recorder) as client:
        history = ThreadfoldChatMessageHistory(thread, client=client, wait=WAIT)
        assert history.messages == []  # never written: empty, not an error
        history.add_messages(CONVERSATION[:4])
        history.add_message(CONVERSATION[4])
        history.add_messages(CONVERSATION[5:])
        history.add_messages([])  # nothing: no append
        got = history.messages
        types = [SystemMessage, HumanMessage, AIMessage, ToolMessage, AIMessage]
        assert [type(m) for m in got] == types
        assert dumped(got) == recorder.expected(thread)
        assert len(recorder.delta_ids) == 3 and history.version == recorder.last_version(thread)
        assert got[2].tool_calls[0]["args"] == {"a": 6, "b": 7}  # type: ignore[attr-defined]
        history.clear()
        assert history.messages == [] and recorder.expected(thread) == []
        history.add_user_message("again")
        assert [m.content for m in history.messages] == ["again"]


@pytest.mark.parametrize("kind", ASYNC)
def test_an_asyncio_history_reads_back_what_it_added(kind: str, stack: Stack) -> None:
    async def main() -> None:
        recorder, thread = Recorder(), new_thread()
        async with AsyncRecording(async_client(kind, stack), recorder) as client:
            history = ThreadfoldChatMessageHistory(thread, client=client, wait=WAIT)
            assert await history.aget_messages() == []
            await history.aadd_messages(CONVERSATION[:4])
            await history.aadd_messages(CONVERSATION[4:])
            assert dumped(await history.aget_messages()) == recorder.expected(thread)
            await history.aclear()
            assert await history.aget_messages() == []
            with pytest.raises(TypeError, match=r"^read: .* is an asyncio client"):
                history.messages  # noqa: B018  # the read is the test
            with pytest.raises(TypeError, match=r"^append: .* is an asyncio client"):
                history.add_messages([HumanMessage("sync")])

    asyncio.run(main())


def test_a_sync_client_serves_the_asyncio_methods_too(stack: Stack) -> None:
    recorder, thread = Recorder(), new_thread()
    with Recording(Client(settings=stack.settings), recorder) as client:
        history = ThreadfoldChatMessageHistory(thread, client=client, wait=WAIT)

        async def main() -> list[BaseMessage]:
            await history.aadd_messages(CONVERSATION)
            return await history.aget_messages()

        assert dumped(asyncio.run(main())) == recorder.expected(thread)


class Gate:
    """A waker that holds the wake-ups until opened: until then no worker folds the
    thread, so what a read returns shows whether it waited for the version."""

    def __init__(self, inner: CeleryWaker) -> None:
        self.inner = inner
        self.held: list[str] = []
        self.open = False
        self.lock = threading.Lock()

    def wake(self, refs: Sequence[str]) -> None:
        with self.lock:
            if not self.open:
                self.held.extend(refs)
                return
        self.inner.wake(refs)

    def release(self) -> None:
        with self.lock:
            self.open, held = True, self.held
        self.inner.wake(held)


def test_a_history_waits_for_its_own_last_add(stack: Stack) -> None:
    """Read-your-writes: a read after an add waits for the worker to fold it; a read
    that does not (read_your_writes=False) answers without it."""
    app = make_celery(stack.settings)
    gate = Gate(CeleryWaker(app, stack.settings.queue))
    thread = new_thread()
    try:
        with Client(settings=stack.settings.model_copy(update=WORKERS_ONLY), waker=gate) as client:
            blind = ThreadfoldChatMessageHistory(thread, client=client, read_your_writes=False)
            history = ThreadfoldChatMessageHistory(thread, client=client, wait=0.2)
            history.add_messages([HumanMessage("hello", id="h1")])
            assert blind.messages == []  # not folded: the gate holds the wake-up
            with pytest.raises(VersionNotReached):
                history.messages  # noqa: B018  # waited 0.2 s for a version that cannot come
            gate.release()
            history = ThreadfoldChatMessageHistory(thread, client=client, wait=WAIT)
            history.add_messages([AIMessage("hi", id="a1")])
            assert [m.id for m in history.messages] == ["h1", "a1"]
    finally:
        app.close()


@pytest.mark.parametrize("kind", SYNC)
def test_runnable_with_message_history_keeps_the_conversation(kind: str, stack: Stack) -> None:
    recorder, thread, seen = Recorder(), new_thread(), list[int]()
    with Recording(sync_client(kind, stack), recorder) as client:
        runnable = chain(lambda t: ThreadfoldChatMessageHistory(t, client=client, wait=WAIT), seen)
        config: Any = {"configurable": {"session_id": thread}}
        answers = [runnable.invoke({"input": f"question {i}"}, config) for i in range(3)]
        assert [a.content for a in answers] == ["answer 0", "answer 1", "answer 2"]
        assert seen == [1, 3, 5]  # the model was given the history each time
        client.wait_for(thread, recorder.last_version(thread), WAIT)
        got = ThreadfoldChatMessageHistory(thread, client=client).messages
        assert [m.content for m in got] == [
            "question 0", "answer 0", "question 1", "answer 1", "question 2", "answer 2",
        ]  # fmt: skip
        assert dumped(got) == recorder.expected(thread)


@pytest.mark.parametrize("kind", ASYNC)
def test_runnable_with_message_history_over_an_asyncio_client(kind: str, stack: Stack) -> None:
    async def main() -> None:
        recorder, thread, seen = Recorder(), new_thread(), list[int]()
        async with AsyncRecording(async_client(kind, stack), recorder) as client:
            runnable = chain(
                lambda t: ThreadfoldChatMessageHistory(t, client=client, wait=WAIT), seen
            )
            config: Any = {"configurable": {"session_id": thread}}
            for i in range(3):
                await runnable.ainvoke({"input": f"question {i}"}, config)
            assert seen == [1, 3, 5]
            await client.wait_for(thread, recorder.last_version(thread), WAIT)
            got = await ThreadfoldChatMessageHistory(thread, client=client).aget_messages()
            assert [m.content for m in got][-2:] == ["question 2", "answer 2"]
            assert dumped(got) == recorder.expected(thread)

    asyncio.run(main())


WRITERS, TURNS = 4, 5


def test_two_histories_on_one_thread_written_at_once_from_several_threads(stack: Stack) -> None:
    """Two histories (one over the direct client, one over HTTP) share one thread; four
    OS threads each run turns through RunnableWithMessageHistory on one of them, one
    clears it mid-way. The thread is the one-at-a-time fold of the appends in its log's
    order."""
    recorder, thread = Recorder(), new_thread()
    with (
        Recording(Client(settings=stack.settings), recorder) as direct,
        Recording(HttpClient(stack.api_url, TOKEN), recorder) as http,
    ):
        histories = [
            ThreadfoldChatMessageHistory(thread, client=direct, wait=WAIT),
            ThreadfoldChatMessageHistory(thread, client=http, wait=WAIT),
        ]
        runnables = [chain(lambda t, h=h: h, []) for h in histories]  # type: ignore[misc]

        def writer(n: int) -> None:
            for turn in range(TURNS):
                runnables[n % 2].invoke(
                    {"input": f"w{n} t{turn}"}, {"configurable": {"session_id": thread}}
                )
                if n == 0 and turn == 1:
                    histories[0].clear()

        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(writer, range(WRITERS)))
        direct.wait_for(thread, recorder.last_version(thread), WAIT)  # every writer's
        got = dumped(ThreadfoldChatMessageHistory(thread, client=direct).messages)
        assert got == recorder.expected(thread)
        assert len(recorder.delta_ids) == WRITERS * TURNS + 1  # every turn, and the clear
        assert got  # the clear came before the last turns


def test_two_asyncio_histories_on_one_thread_written_at_once(stack: Stack) -> None:
    async def main() -> None:
        recorder, thread = Recorder(), new_thread()
        async with (
            AsyncRecording(AsyncClient(settings=stack.settings), recorder) as direct,
            AsyncRecording(AsyncHttpClient(stack.api_url, TOKEN), recorder) as http,
        ):
            histories = [
                ThreadfoldChatMessageHistory(thread, client=direct, wait=WAIT),
                ThreadfoldChatMessageHistory(thread, client=http, wait=WAIT),
            ]
            runnables = [chain(lambda t, h=h: h, []) for h in histories]  # type: ignore[misc]

            async def writer(n: int) -> None:
                for turn in range(TURNS):
                    await runnables[n % 2].ainvoke(
                        {"input": f"w{n} t{turn}"}, {"configurable": {"session_id": thread}}
                    )

            await asyncio.gather(*(writer(n) for n in range(WRITERS)))
            await direct.wait_for(thread, recorder.last_version(thread), WAIT)
            final = ThreadfoldChatMessageHistory(thread, client=direct)
            got = dumped(await final.aget_messages())
            assert got == recorder.expected(thread)
            assert len(got) == 2 * WRITERS * TURNS

    asyncio.run(main())


def test_to_langchain_loads_every_message_type_back_equal() -> None:
    from threadfold.core import dump_messages, to_messages  # noqa: PLC0415

    dumps = dump_messages(to_messages(CONVERSATION))
    assert dumped(to_langchain(dumps)) == dumps
    assert [type(m) for m in to_langchain(dumps)] == [type(m) for m in CONVERSATION]
