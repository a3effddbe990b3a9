"""LangChain integration: a chat message history kept in a threadfold thread.

``ThreadfoldChatMessageHistory(thread_id, client=...)`` is a langchain-core
``BaseChatMessageHistory`` over any threadfold client: direct or HTTP, sync or asyncio.
Its messages are real LangChain message objects, equal (``model_dump()``) to the
thread's fold; it reads back what was added through its client (read-your-writes),
whichever history object added it. Several histories, in several processes, may write
one thread at once: the thread is the one-at-a-time fold of their appends, in the order
of its log.

Needs the ``langchain`` extra (``pip install 'threadfold[langchain]'``); nothing else
in threadfold imports LangChain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from threadfold.extras import needs

with needs("threadfold.langchain", "langchain_core"):
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage, RemoveMessage, messages_from_dict

from threadfold.conversation import Client, Conversation, OnThread
from threadfold.core.messages import REMOVE_ALL_MESSAGES

__all__ = ["ThreadfoldChatMessageHistory", "to_langchain"]


def to_langchain(messages: Iterable[Mapping[str, Any]]) -> list[BaseMessage]:
    """A thread's messages (``State.messages`` in the ``langchain`` format) as LangChain
    message objects: each dict is a ``model_dump()``, loaded back by its ``type``."""
    return messages_from_dict([{"type": m["type"], "data": m} for m in messages])


class ThreadfoldChatMessageHistory(OnThread, BaseChatMessageHistory):
    """The chat history of one thread (``thread_id``), read and written through
    ``client`` (``threadfold.Client``, ``AsyncClient``, ``HttpClient`` or
    ``AsyncHttpClient``).

    * ``messages`` / ``aget_messages()``: the thread, as LangChain messages. A read
      waits up to ``wait`` seconds for the worker to fold the latest add to the thread
      through the same client, by this history or another (``read_your_writes=False``:
      the thread as it stands). A thread never written is empty.
    * ``add_messages`` / ``aadd_messages``: one append (one delta) per call.
    * ``clear`` / ``aclear``: appends a remove-all (``RemoveMessage(id="__remove_all__")``):
      the thread is emptied in its log's order, so a writer's message appended after the
      clear is kept, and a read waits for the clear as for any add. (Deleting the thread
      and its log is ``client.delete(thread_id)``.)

    A sync client serves every method (the ``a``-prefixed ones from a worker thread, off
    the event loop); an asyncio client serves the ``a``-prefixed ones, natively, and
    its sync calls raise ``TypeError`` (it belongs to its event loop).
    """

    def __init__(
        self,
        thread_id: str,
        *,
        client: Client,
        wait: float = 10.0,
        read_your_writes: bool = True,
    ) -> None:
        super().__init__()
        self._thread = Conversation(client, thread_id, wait=wait, read_your_writes=read_your_writes)

    # The base class declares ``messages`` as an attribute; LangChain's own histories
    # over a store (and its docs' example) make it a property that reads the store.
    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return to_langchain(self._thread.read())

    async def aget_messages(self) -> list[BaseMessage]:
        return to_langchain(await self._thread.aread())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:  # LangChain calls it with none when a run produced none
            self._thread.append(list(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            await self._thread.aappend(list(messages))

    def clear(self) -> None:
        self._thread.append([RemoveMessage(id=REMOVE_ALL_MESSAGES)])

    async def aclear(self) -> None:
        await self._thread.aappend([RemoveMessage(id=REMOVE_ALL_MESSAGES)])

    def __repr__(self) -> str:
        return f"<ThreadfoldChatMessageHistory thread_id={self.thread_id!r} client={self.client!r}>"
