"""LangChain's message model (langchain-core 1.8.3) as frozen msgspec Structs.

One Struct per LangChain class, same names, same fields and defaults. Three choices
differ from LangChain on purpose:

* Messages are **frozen**. A reducer result can then share message objects with its
  inputs (as LangGraph's does) without a later write changing an earlier state, and a
  cached id index can never go stale because an id changed under it.
* Unknown fields (pydantic's ``extra="allow"``) live in ``extra`` and are flattened back
  into the dict form by :mod:`threadfold.core.dump`; the field name itself never reaches users.
* ``ToolCall``, ``InvalidToolCall``, ``ToolCallChunk`` and ``UsageMetadata`` stay plain
  dicts, as they are TypedDicts in LangChain: they are validated once, on the way in.

The Structs encode as tagged msgpack arrays (``array_like``): the tag is the LangChain
``type`` string, so a stored message carries no field names.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import msgspec

Json: TypeAlias = Any


class BaseMessage(msgspec.Struct, frozen=True, kw_only=True, array_like=True, tag_field="type"):
    """Fields every LangChain message has."""

    content: str | list[Json]
    additional_kwargs: dict[str, Json] = {}
    response_metadata: dict[str, Json] = {}
    name: str | None = None
    id: str | None = None
    extra: dict[str, Json] = {}

    @property
    def type(self) -> str:
        """LangChain's ``type`` discriminator."""
        return TYPE_OF[type(self)]


class HumanMessage(BaseMessage, tag="human", frozen=True):
    """A message from the user."""


class SystemMessage(BaseMessage, tag="system", frozen=True):
    """A system (or OpenAI ``developer``) message."""


class AIMessage(BaseMessage, tag="ai", frozen=True):
    """A model's answer, with parsed tool calls and token usage."""

    tool_calls: list[dict[str, Json]] = []
    invalid_tool_calls: list[dict[str, Json]] = []
    usage_metadata: dict[str, Json] | None = None


class ToolMessage(BaseMessage, tag="tool", frozen=True):
    """The result of a tool call."""

    tool_call_id: str
    artifact: Json = None
    status: str = "success"


class FunctionMessage(BaseMessage, tag="function", frozen=True):
    """The legacy OpenAI function result; ``name`` is required."""

    name: str  # required here, optional on the base


class ChatMessage(BaseMessage, tag="chat", frozen=True):
    """A message with an arbitrary role."""

    role: str


class RemoveMessage(BaseMessage, tag="remove", frozen=True):
    """Removes the message with ``id`` from a thread; ``__remove_all__`` clears it."""


class HumanMessageChunk(HumanMessage, tag="HumanMessageChunk", frozen=True):
    """A streamed piece of a human message."""


class SystemMessageChunk(SystemMessage, tag="SystemMessageChunk", frozen=True):
    """A streamed piece of a system message."""


class AIMessageChunk(AIMessage, tag="AIMessageChunk", frozen=True):
    """A streamed piece of a model's answer."""

    tool_call_chunks: list[dict[str, Json]] = []
    chunk_position: str | None = None


class ToolMessageChunk(ToolMessage, tag="ToolMessageChunk", frozen=True):
    """A streamed piece of a tool result."""


class FunctionMessageChunk(FunctionMessage, tag="FunctionMessageChunk", frozen=True):
    """A streamed piece of a function result."""


class ChatMessageChunk(ChatMessage, tag="ChatMessageChunk", frozen=True):
    """A streamed piece of a chat message."""


AnyMessage: TypeAlias = (
    HumanMessage
    | SystemMessage
    | AIMessage
    | ToolMessage
    | FunctionMessage
    | ChatMessage
    | RemoveMessage
    | HumanMessageChunk
    | SystemMessageChunk
    | AIMessageChunk
    | ToolMessageChunk
    | FunctionMessageChunk
    | ChatMessageChunk
)

MESSAGE_CLASSES: Final[tuple[type[BaseMessage], ...]] = (
    HumanMessage,
    SystemMessage,
    AIMessage,
    ToolMessage,
    FunctionMessage,
    ChatMessage,
    RemoveMessage,
    HumanMessageChunk,
    SystemMessageChunk,
    AIMessageChunk,
    ToolMessageChunk,
    FunctionMessageChunk,
    ChatMessageChunk,
)

TYPE_OF: Final[dict[type[BaseMessage], str]] = {
    cls: str(cls.__struct_config__.tag) for cls in MESSAGE_CLASSES
}
CLASS_OF: Final[dict[str, type[BaseMessage]]] = {tag: cls for cls, tag in TYPE_OF.items()}

CHUNK_CLASSES: Final[frozenset[type[BaseMessage]]] = frozenset(
    {
        HumanMessageChunk,
        SystemMessageChunk,
        AIMessageChunk,
        ToolMessageChunk,
        FunctionMessageChunk,
        ChatMessageChunk,
    }
)

#: The non-chunk class a chunk becomes in ``message_chunk_to_message``.
BASE_OF_CHUNK: Final[dict[type[BaseMessage], type[BaseMessage]]] = {
    HumanMessageChunk: HumanMessage,
    SystemMessageChunk: SystemMessage,
    AIMessageChunk: AIMessage,
    ToolMessageChunk: ToolMessage,
    FunctionMessageChunk: FunctionMessage,
    ChatMessageChunk: ChatMessage,
}

REMOVE_ALL_MESSAGES: Final = "__remove_all__"


def is_chunk(message: BaseMessage) -> bool:
    """True for the ``*MessageChunk`` classes."""
    return type(message) in CHUNK_CLASSES


def message_chunk_to_message(message: BaseMessage) -> BaseMessage:
    """LangChain's ``message_chunk_to_message``: a chunk becomes its base class.

    ``tool_call_chunks`` and ``chunk_position`` go, and so do extra fields (LangChain
    keeps them in ``__pydantic_extra__``, which the conversion does not copy). A
    non-chunk is returned as it is.
    """
    base = BASE_OF_CHUNK.get(type(message))
    if base is None:
        return message
    fields = {f: getattr(message, f) for f in base.__struct_fields__ if f != "extra"}
    return base(**fields)
