"""Chunk addition, as LangChain's ``+`` on ``*MessageChunk`` does it (langchain-core 1.8.3).

Streaming models send a message in pieces; a consumer gets the whole message by adding
the pieces left to right. This module reproduces that ``+`` on our frozen Structs: which
pairs add, which class and id the sum gets, and which fields it keeps. The value rules
it merges the fields with are in :mod:`threadfold.core.merge`; an AI sum is rebuilt, validators
and all, by :mod:`threadfold.core.ai_chunk`. Both are re-exported here, where callers have always
found them.

A refusal is a :class:`ChunkMergeError` whose ``lc_error`` names LangChain's exception
class. Chunk addition is **not associative** (spec §4.6), so :func:`fold_chunks` is a
strict left fold and nothing here may re-associate.

All functions are pure: inputs (frozen Structs and the dicts/lists inside them) are
never mutated; results may share unchanged sub-objects with the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from threadfold.core.ai_chunk import build_ai_chunk, init_tool_calls, tool_call_chunk
from threadfold.core.errors import ChunkMergeError
from threadfold.core.merge import (
    LC_PREFIX,
    add_usage,
    merge_content,
    merge_dicts,
    merge_lists,
    merge_obj,
)
from threadfold.core.messages import (
    AIMessageChunk,
    BaseMessage,
    ChatMessageChunk,
    FunctionMessageChunk,
    HumanMessageChunk,
    SystemMessageChunk,
    ToolMessageChunk,
    is_chunk,
)

__all__ = [
    "add_chunks",
    "add_usage",
    "fold_chunks",
    "init_tool_calls",
    "merge_content",
    "merge_dicts",
    "merge_lists",
    "merge_obj",
]

_LC_RUN_PREFIX: Final = "lc_run-"


# --------------------------------------------------------------------------- chunk +


def _pick_id(ids: Iterable[str | None]) -> str | None:
    """Provider id, else the first ``lc_run-`` id, else the first other ``lc_`` id."""
    best: str | None = None
    best_rank = -1
    for id_ in ids:
        if not id_:
            continue
        if not id_.startswith(LC_PREFIX):
            return id_
        rank = 1 if id_.startswith(_LC_RUN_PREFIX) else 0
        if rank > best_rank:
            best, best_rank = id_, rank
    return best


def _add_ai_chunks(left: AIMessageChunk, right: AIMessageChunk) -> AIMessageChunk:
    content = merge_content(left.content, right.content)
    additional_kwargs = merge_dicts(left.additional_kwargs, right.additional_kwargs)
    response_metadata = merge_dicts(left.response_metadata, right.response_metadata)
    merged_chunks = merge_lists(left.tool_call_chunks, right.tool_call_chunks) or []
    # Only the four ToolCallChunk keys survive a merge; anything else a block carried goes.
    chunks = [
        tool_call_chunk(c.get("name"), c.get("args"), c.get("id"), c.get("index"))
        for c in merged_chunks
    ]
    usage = None
    if left.usage_metadata or right.usage_metadata is not None:
        usage = add_usage(left.usage_metadata, right.usage_metadata)
    return build_ai_chunk(
        content=content,
        additional_kwargs=additional_kwargs,
        response_metadata=response_metadata,
        id_=_pick_id([left.id, right.id]),
        tool_call_chunks=chunks,
        usage_metadata=usage,
        chunk_position="last" if "last" in (left.chunk_position, right.chunk_position) else None,
    )


def _merged_common(left: BaseMessage, right: BaseMessage) -> dict[str, Any]:
    """The fields every chunk sum merges, in LangChain's order (which error shows first)."""
    return {
        "content": merge_content(left.content, right.content),
        "additional_kwargs": merge_dicts(left.additional_kwargs, right.additional_kwargs),
        "response_metadata": merge_dicts(left.response_metadata, right.response_metadata),
    }


def _add_generic(left: BaseMessage, right: BaseMessage) -> BaseMessage:
    """``BaseMessageChunk.__add__``: left's class, left's id, and nothing else kept."""
    common = _merged_common(left, right)
    if isinstance(left, AIMessageChunk):
        return build_ai_chunk(id_=left.id, tool_call_chunks=[], **common)
    if isinstance(left, ToolMessageChunk):
        # LangChain's ToolMessage validator reads values["tool_call_id"] unguarded.
        raise ChunkMergeError("'tool_call_id'", lc_error="KeyError")
    if isinstance(left, FunctionMessageChunk):
        raise ChunkMergeError(
            "1 validation error for FunctionMessageChunk\nname\n  Field required",
            lc_error="ValidationError",
        )
    if isinstance(left, ChatMessageChunk):
        return ChatMessageChunk(role=left.role, id=left.id, **common)
    return type(left)(id=left.id, **common)


def _add_to_ai(left: BaseMessage, right: BaseMessage) -> BaseMessage:
    assert isinstance(left, AIMessageChunk)
    if isinstance(right, AIMessageChunk):
        return _add_ai_chunks(left, right)
    return _add_generic(left, right)


def _add_to_tool(left: BaseMessage, right: BaseMessage) -> BaseMessage:
    assert isinstance(left, ToolMessageChunk)
    if not isinstance(right, ToolMessageChunk):
        return _add_generic(left, right)
    if left.tool_call_id != right.tool_call_id:
        # (sic) LangChain's text says "names" although it compares tool_call_id.
        raise ChunkMergeError(
            "Cannot concatenate ToolMessageChunks with different names.", lc_error="ValueError"
        )
    # Evaluated in LangChain's order, so the same error shows when several would fail.
    content = merge_content(left.content, right.content)
    artifact = merge_obj(left.artifact, right.artifact)
    return ToolMessageChunk(
        tool_call_id=left.tool_call_id,
        content=content,
        artifact=artifact,
        additional_kwargs=merge_dicts(left.additional_kwargs, right.additional_kwargs),
        response_metadata=merge_dicts(left.response_metadata, right.response_metadata),
        id=left.id,
        status="error" if "error" in (left.status, right.status) else "success",
    )


def _add_to_chat(left: BaseMessage, right: BaseMessage) -> BaseMessage:
    assert isinstance(left, ChatMessageChunk)
    if isinstance(right, ChatMessageChunk) and left.role != right.role:
        raise ChunkMergeError(
            "Cannot concatenate ChatMessageChunks with different roles.", lc_error="ValueError"
        )
    return _add_generic(left, right)


def _add_to_function(left: BaseMessage, right: BaseMessage) -> BaseMessage:
    assert isinstance(left, FunctionMessageChunk)
    if not isinstance(right, FunctionMessageChunk):
        return _add_generic(left, right)
    if left.name != right.name:
        raise ChunkMergeError(
            "Cannot concatenate FunctionMessageChunks with different names.",
            lc_error="ValueError",
        )
    return FunctionMessageChunk(name=left.name, id=left.id, **_merged_common(left, right))


_ADDERS: Final[dict[type[BaseMessage], Callable[[BaseMessage, BaseMessage], BaseMessage]]] = {
    AIMessageChunk: _add_to_ai,
    ToolMessageChunk: _add_to_tool,
    ChatMessageChunk: _add_to_chat,
    FunctionMessageChunk: _add_to_function,
    HumanMessageChunk: _add_generic,
    SystemMessageChunk: _add_generic,
}


def add_chunks(left: BaseMessage, right: BaseMessage) -> BaseMessage:
    """``left + right`` for message chunks; the result has ``left``'s class.

    ``name`` (except on function chunks) and ``extra`` are dropped, as LangChain builds
    the sum from a fixed list of fields.
    """
    adder = _ADDERS.get(type(left))
    if adder is None:
        # LangChain's BaseMessage.__add__ builds a ChatPromptTemplate here; a message
        # store has no use for one, so a non-chunk on the left is refused instead.
        raise ChunkMergeError(
            f"{type(left).__name__} is not a message chunk and cannot be added to",
            lc_error="TypeError",
        )
    if not is_chunk(right):
        raise ChunkMergeError(
            f'unsupported operand type(s) for +: "{type(left).__name__}"'
            f' and "{type(right).__name__}"',
            lc_error="TypeError",
        )
    return adder(left, right)


def fold_chunks(messages: Iterable[BaseMessage]) -> BaseMessage:
    """``((m0 + m1) + m2) + …``: chunk addition is not associative, so never regroup."""
    iterator = iter(messages)
    try:
        total = next(iterator)
    except StopIteration:
        raise ChunkMergeError(
            "cannot fold an empty sequence of chunks", lc_error="TypeError"
        ) from None
    for message in iterator:
        total = add_chunks(total, message)
    return total
