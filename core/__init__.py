"""threadfold's core: LangChain's message model and LangGraph's two message reducers.

Pure logic, no I/O: ``workers`` and ``api`` build on it, it imports neither.
"""

from threadfold.core.add_messages import add_messages
from threadfold.core.convert import to_message, to_messages
from threadfold.core.delta import Messages, apply_deltas
from threadfold.core.dump import dump_message, dump_messages
from threadfold.core.errors import ChunkMergeError, InvalidMessage, ReducerError, ThreadfoldError
from threadfold.core.fold import Effect, ThreadFold
from threadfold.core.ids import ensure_ids
from threadfold.core.messages import (
    REMOVE_ALL_MESSAGES,
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AIMessage",
    "AIMessageChunk",
    "AnyMessage",
    "BaseMessage",
    "ChatMessage",
    "ChatMessageChunk",
    "ChunkMergeError",
    "Effect",
    "FunctionMessage",
    "FunctionMessageChunk",
    "HumanMessage",
    "HumanMessageChunk",
    "InvalidMessage",
    "Messages",
    "ReducerError",
    "RemoveMessage",
    "SystemMessage",
    "SystemMessageChunk",
    "ThreadFold",
    "ThreadfoldError",
    "ToolMessage",
    "ToolMessageChunk",
    "add_messages",
    "apply_deltas",
    "dump_message",
    "dump_messages",
    "ensure_ids",
    "to_message",
    "to_messages",
]
