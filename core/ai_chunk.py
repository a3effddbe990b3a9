"""An AIMessageChunk built as LangChain's constructor and validators build it.

Adding two AI chunks does not just merge their fields: LangChain constructs a new
``AIMessageChunk`` from the merged fields, and its validators re-derive the tool calls.
Without ``tool_call_chunks`` the constructor takes them from OpenAI's raw
``additional_kwargs["tool_calls"]``; with them, ``init_tool_calls`` recomputes
``tool_calls`` and ``invalid_tool_calls`` by partial-JSON parsing and, on a final v1
chunk, promotes the tool-call blocks in the content. That construction is one step of
its own, used by :mod:`threadfold.core.chunks` for every AI sum and by
:mod:`threadfold.core.construct` for every AIMessageChunk it builds, so it lives apart from both.

All functions are pure: inputs are never mutated.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, NotRequired

import pydantic
from typing_extensions import TypedDict

from threadfold.core.errors import ChunkMergeError
from threadfold.core.merge import Content, JsonDict, require_hashable
from threadfold.core.messages import AIMessageChunk
from threadfold.core.partial_json import parse_partial_json

__all__ = ["build_ai_chunk", "init_tool_calls", "tool_call_chunk"]

_SERVER_CALL_TYPES: Final = frozenset({"server_tool_call", "server_tool_call_chunk"})


# --------------------------------------------------------------------------- tool calls


def init_tool_calls(
    *,
    content: Content,
    response_metadata: JsonDict,
    chunk_position: str | None,
    tool_calls: list[JsonDict],
    invalid_tool_calls: list[JsonDict],
    tool_call_chunks: list[JsonDict],
) -> tuple[Content, list[JsonDict], list[JsonDict], list[JsonDict]]:
    """LangChain's AIMessageChunk after-validators, as a function of the fields.

    Without ``tool_call_chunks`` the chunks are derived from the (invalid) tool calls;
    with them, the tool calls are *recomputed* from the chunks, overwriting any given.
    A final v1 chunk also promotes the tool-call chunk blocks in its content.
    Returns ``(content, tool_calls, invalid_tool_calls, tool_call_chunks)``.
    """
    final_v1 = chunk_position == "last" and response_metadata.get("output_version") == "v1"
    if not tool_call_chunks:
        # LangChain returns early on this branch, so tool-call blocks stay unpromoted.
        tool_call_chunks = _chunks_from_calls(tool_calls, invalid_tool_calls)
    else:
        tool_calls, invalid_tool_calls = _calls_from_chunks(tool_call_chunks)
        if final_v1 and isinstance(content, list):
            content = _promote_tool_call_blocks(content, tool_calls)
    # Server calls are a separate validator in LangChain: it runs on both branches.
    if final_v1 and isinstance(content, list):
        content = _promote_server_call_blocks(content)
    return content, tool_calls, invalid_tool_calls, tool_call_chunks


def tool_call_chunk(name: Any, args: Any, id_: Any, index: Any) -> JsonDict:
    return {"name": name, "args": args, "id": id_, "index": index, "type": "tool_call_chunk"}


def _chunks_from_calls(calls: list[JsonDict], invalid: list[JsonDict]) -> list[JsonDict]:
    derived = [tool_call_chunk(tc["name"], json.dumps(tc["args"]), tc["id"], None) for tc in calls]
    derived += [tool_call_chunk(tc["name"], tc["args"], tc["id"], None) for tc in invalid]
    return derived


def _calls_from_chunks(chunks: list[JsonDict]) -> tuple[list[JsonDict], list[JsonDict]]:
    calls: list[JsonDict] = []
    invalid: list[JsonDict] = []
    for chunk in chunks:
        name, raw_args, id_ = chunk.get("name"), chunk.get("args"), chunk.get("id")
        args = _parse_args(raw_args)
        if isinstance(args, dict):
            calls.append({"name": name or "", "args": args, "id": id_, "type": "tool_call"})
        else:
            invalid.append(
                {
                    "name": name,
                    "args": raw_args,
                    "id": id_,
                    "error": None,
                    "type": "invalid_tool_call",
                }
            )
    return calls, invalid


def _parse_args(raw: Any) -> Any:
    """A chunk's arguments as a value; ``None`` when they cannot be parsed at all."""
    if not raw:
        return {}  # a call announced before any argument text has empty arguments
    try:
        return parse_partial_json(raw)
    except (ValueError, TypeError, RecursionError):
        return None


def _promote_tool_call_blocks(content: list[Any], calls: list[JsonDict]) -> list[Any]:
    """Replace ``tool_call_chunk`` content blocks by the ``tool_call`` with their id."""
    by_id = {tc.get("id"): tc for tc in calls}  # a repeated id: the last call wins
    # LangChain puts one shared dict at every position with a given id and then copies
    # each block's "extras" onto it, so every such position shows the last "extras".
    extras: dict[Any, Any] = {}
    promotable = [_promotable_id(block, by_id) for block in content]
    for block, call_id in zip(content, promotable, strict=True):
        if call_id is not None and "extras" in block:
            extras[call_id] = block["extras"]
    promoted: list[Any] = []
    for block, call_id in zip(content, promotable, strict=True):
        if call_id is None:
            promoted.append(block)
            continue
        tc = by_id[call_id]
        new = {"type": "tool_call", "name": tc["name"], "args": tc["args"], "id": tc.get("id")}
        if call_id in extras:
            new["extras"] = extras[call_id]
        promoted.append(new)
    return promoted


def _promotable_id(block: Any, by_id: dict[Any, JsonDict]) -> Any:
    if not (isinstance(block, dict) and block.get("type") == "tool_call_chunk"):
        return None
    call_id = block.get("id")
    if not call_id:
        return None
    require_hashable(call_id)
    return call_id if call_id in by_id else None


def _promote_server_call_blocks(content: list[Any]) -> list[Any]:
    """Turn server tool-call blocks whose ``args`` are a JSON object into calls."""
    promoted: list[Any] = []
    for block in content:
        args = _server_call_args(block)
        if args is not None:
            block = {**block, "type": "server_tool_call", "args": args}  # noqa: PLW2901
        promoted.append(block)
    return promoted


def _server_call_args(block: Any) -> JsonDict | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    require_hashable(kind)
    args_text = block.get("args") or "{}"
    if kind not in _SERVER_CALL_TYPES or not isinstance(args_text, str):
        return None
    try:
        args = json.loads(args_text)  # strict JSON here, unlike the tool-call chunks
    except json.JSONDecodeError:
        return None
    except RecursionError:
        # LangChain's json.loads raises here; the block is kept as given, like args that
        # do not parse (a worker's chunk merge runs this too: raising would poison it).
        return None
    return args if isinstance(args, dict) else None


# --------------------------------------------------------------------------- raw OpenAI calls


class _RawToolCallChunk(TypedDict):
    """The ``ToolCallChunk`` shape LangChain validates raw OpenAI tool calls into."""

    name: str | None
    args: str | None
    id: str | None
    index: int | None
    type: NotRequired[Literal["tool_call_chunk"]]


# pydantic's lax coercion ("1" -> 1 for an index) is the behaviour to match here, so the
# raw-call shape is validated by pydantic itself rather than by a re-implementation.
_RAW_CHUNKS: Final = pydantic.TypeAdapter(list[_RawToolCallChunk])


def _chunks_from_raw_tool_calls(additional_kwargs: JsonDict) -> list[JsonDict]:
    """``tool_call_chunks`` from ``additional_kwargs["tool_calls"]`` (OpenAI's raw form).

    LangChain builds an AIMessageChunk's chunks this way when none were given; any
    malformed entry makes it give up silently, leaving no chunks.
    """
    raw = additional_kwargs.get("tool_calls")
    if not raw or not isinstance(raw, list | tuple):
        return []
    chunks = []
    for call in raw:
        if not isinstance(call, dict):
            return []
        name = args = None
        if "function" in call:
            function = call["function"]
            if not (isinstance(function, dict) and "arguments" in function and "name" in function):
                return []
            name, args = function["name"], function["arguments"]
        chunks.append(tool_call_chunk(name, args, call.get("id"), call.get("index")))
    try:
        return [dict(c) for c in _RAW_CHUNKS.validate_python(chunks)]
    except pydantic.ValidationError as exc:
        raise ChunkMergeError(
            _validation_text("AIMessageChunk", "tool_call_chunks.", exc),
            lc_error="ValidationError",
        ) from exc


def _validation_text(title: str, prefix: str, exc: pydantic.ValidationError) -> str:
    count = exc.error_count()
    lines = [f"{count} validation error{'' if count == 1 else 's'} for {title}"]
    for error in exc.errors():
        lines += [prefix + ".".join(map(str, error["loc"])), f"  {error['msg']}"]
    return "\n".join(lines)


# --------------------------------------------------------------------------- constructor


# LangChain's AIMessageChunk fields, by name, as its constructor takes them.
def build_ai_chunk(  # noqa: PLR0913
    *,
    content: Content,
    additional_kwargs: JsonDict,
    response_metadata: JsonDict,
    id_: str | None,
    tool_call_chunks: list[JsonDict],
    usage_metadata: JsonDict | None = None,
    chunk_position: str | None = None,
) -> AIMessageChunk:
    """An AIMessageChunk as LangChain's constructor and validators would build it."""
    if not tool_call_chunks:
        tool_call_chunks = _chunks_from_raw_tool_calls(additional_kwargs)
    content, calls, invalid, chunks = init_tool_calls(
        content=content,
        response_metadata=response_metadata,
        chunk_position=chunk_position,
        tool_calls=[],
        invalid_tool_calls=[],
        tool_call_chunks=tool_call_chunks,
    )
    return AIMessageChunk(
        content=content,
        additional_kwargs=additional_kwargs,
        response_metadata=response_metadata,
        id=id_,
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata=usage_metadata,
        tool_call_chunks=chunks,
        chunk_position=chunk_position,
    )
