"""Chunk addition, as LangChain's ``+`` on ``*MessageChunk`` does it (langchain-core 1.8.3).

Streaming models send a message in pieces; a consumer gets the whole message by adding
the pieces left to right. This module reproduces that ``+`` on our frozen Structs: the
dict/list/content merge rules, the token-usage sum, the id preference, and the
validators LangChain runs when it builds the sum (tool calls re-derived from
``tool_call_chunks`` by partial-JSON parsing).

Faithfulness rules over tidiness: where LangChain concatenates equal strings
(``"gpt-4" + "gpt-4"``), drops a string (``[] + "x"``) or refuses a pair, so do we; a
refusal is a :class:`ChunkMergeError` whose ``lc_error`` names LangChain's exception
class. Chunk addition is **not associative** (spec §4.6), so :func:`fold_chunks` is a
strict left fold and nothing here may re-associate.

All functions are pure: inputs (frozen Structs and the dicts/lists inside them) are
never mutated; results may share unchanged sub-objects with the inputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Literal, NotRequired, TypeAlias

import pydantic
from typing_extensions import TypedDict

from core.errors import ChunkMergeError
from core.messages import (
    AIMessageChunk,
    BaseMessage,
    ChatMessageChunk,
    FunctionMessageChunk,
    HumanMessageChunk,
    SystemMessageChunk,
    ToolMessageChunk,
    is_chunk,
)
from core.partial_json import parse_partial_json

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

Content: TypeAlias = str | list[Any]
JsonDict: TypeAlias = dict[str, Any]

#: Integer keys that identify or time-stamp a chunk: a later value replaces, never sums.
_LAST_WINS: Final = frozenset({"index", "created", "timestamp"})
#: String keys whose equal values are kept once instead of being concatenated.
_SAME_STR_ONCE: Final = frozenset({"id", "output_version", "model_provider"})
_LC_PREFIX: Final = "lc_"
_LC_RUN_PREFIX: Final = "lc_run-"
_SERVER_CALL_TYPES: Final = frozenset({"server_tool_call", "server_tool_call_chunk"})
#: pydantic re-validates a summed ``usage_metadata``, which puts declared keys first.
_USAGE_ORDER: Final = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "input_token_details",
    "output_token_details",
)
_DETAIL_ORDER: Final[dict[str, tuple[str, ...]]] = {
    "input_token_details": ("audio", "cache_creation", "cache_read"),
    "output_token_details": ("audio", "reasoning"),
}
_USAGE_MAX_DEPTH: Final = 100


# --------------------------------------------------------------------------- dicts/lists


def merge_dicts(left: JsonDict, *others: JsonDict) -> JsonDict:
    """Merge ``others`` into a copy of ``left``, key by key (spec §4.3)."""
    merged = dict(left)
    for right in others:
        for key, value in right.items():
            _merge_key(merged, key, value)
    return merged


def _merge_key(merged: JsonDict, key: Any, value: Any) -> None:
    if key not in merged or (value is not None and merged[key] is None):
        merged[key] = value
        return
    current = merged[key]
    if value is None:
        return
    if type(current) is not type(value):
        raise ChunkMergeError(
            f'additional_kwargs["{key}"] already exists in this message,'
            " but with a different type.",
            lc_error="TypeError",
        )
    merged[key] = _merge_same_type(key, current, value)


def _merge_same_type(key: Any, left: Any, right: Any) -> Any:
    if isinstance(left, str):
        keep = (key == "index" and left.startswith(_LC_PREFIX)) or (
            key in _SAME_STR_ONCE and left == right
        )
        return left if keep else left + right
    if isinstance(left, dict):
        return merge_dicts(left, right)
    if isinstance(left, list):
        return merge_lists(left, right)
    if left == right:
        return left
    # bool is an int subclass; LangChain refuses unequal bools rather than summing them.
    if isinstance(left, int) and not isinstance(left, bool):
        return right if key in _LAST_WINS else left + right
    raise ChunkMergeError(
        f"Additional kwargs key {key} already exists in left dict and value has"
        f" unsupported type {type(left)}.",
        lc_error="TypeError",
    )


def merge_lists(left: list[Any] | None, *others: list[Any] | None) -> list[Any] | None:
    """Concatenate lists, merging dict elements that share an ``index`` (spec §4.2)."""
    merged = None if left is None else list(left)
    for other in others:
        if other is None:
            continue
        if merged is None:
            merged = list(other)
            continue
        for element in other:
            _merge_element(merged, element)
    return merged


def _merge_element(merged: list[Any], element: Any) -> None:
    if not _has_merge_index(element):
        merged.append(element)
        return
    # LangChain tests every candidate before taking the first, so an unhashable id in a
    # later candidate fails the merge even when an earlier one matched.
    partners = [pos for pos, cand in enumerate(merged) if _is_partner(cand, element)]
    if not partners:
        merged.append(element)
        return
    target = merged[partners[0]]
    merged[partners[0]] = merge_dicts(target, _mergeable_part(target, element))


def _has_merge_index(element: Any) -> bool:
    if not isinstance(element, dict) or "index" not in element:
        return False
    index = element["index"]
    return isinstance(index, int) or (isinstance(index, str) and index.startswith(_LC_PREFIX))


def _is_partner(candidate: Any, element: JsonDict) -> bool:
    if not (
        isinstance(candidate, dict)
        and "index" in candidate
        and candidate["index"] == element["index"]
    ):
        return False
    left_id, right_id = candidate.get("id"), element.get("id")
    return _is_blank(left_id) or _is_blank(right_id) or left_id == right_id


def _is_blank(value: Any) -> bool:
    """LangChain's ``value in {None, ""}``, which fails for unhashable values."""
    _require_hashable(value)
    return value is None or value == ""


def _require_hashable(value: Any) -> None:
    try:
        hash(value)
    except TypeError as exc:
        raise ChunkMergeError(str(exc), lc_error="TypeError") from exc


def _mergeable_part(target: JsonDict, element: JsonDict) -> JsonDict:
    """What of ``element`` is merged into ``target``: never its ``type``.

    A ``non_standard`` block merged into a typed block carries its ``value`` over as
    ``extras`` (or as ``value`` into another ``non_standard`` block).
    """
    target_type = target.get("type")
    if target_type and element.get("type") == "non_standard" and "value" in element:
        value = _without_type(element["value"])
        if target_type != "non_standard":
            return {"extras": value}
        return {"value": value, "index": element["index"]}
    return {k: v for k, v in element.items() if k != "type"}


def _without_type(value: Any) -> JsonDict:
    if not isinstance(value, dict):
        raise ChunkMergeError(
            f"'{type(value).__name__}' object has no attribute 'items'",
            lc_error="AttributeError",
        )
    return {k: v for k, v in value.items() if k != "type"}


def merge_obj(left: Any, right: Any) -> Any:
    """Merge two arbitrary values (a ToolMessageChunk's ``artifact``)."""
    if left is None or right is None:
        return right if left is None else left
    if type(left) is not type(right):
        raise ChunkMergeError(
            f"left and right are of different types. Left type:  {type(left)}."
            f" Right type: {type(right)}.",
            lc_error="TypeError",
        )
    if isinstance(left, str):
        return left + right
    if isinstance(left, dict):
        return merge_dicts(left, right)
    if isinstance(left, list):
        return merge_lists(left, right)
    if left == right:
        return left
    raise ChunkMergeError(
        f"Unable to merge left={left!r} and right={right!r}. Both must be of type str,"
        " dict, or list, or else be two equal objects.",
        lc_error="ValueError",
    )


def merge_content(first: Content | None, *rest: Content) -> Content:
    """Merge message contents left to right (spec §4.1)."""
    merged: Content = "" if first is None else first
    if isinstance(merged, list):
        merged = list(merged)  # the steps below append to it in place
    for content in rest:
        merged = _merge_two_contents(merged, content)
    return merged


def _merge_two_contents(merged: Content, content: Content) -> Content:
    """One step of :func:`merge_content`; a list ``merged`` is ours to change."""
    if isinstance(merged, str):
        return merged + content if isinstance(content, str) else [merged, *content]
    if isinstance(content, list):
        return merge_lists(merged, content) or []
    if merged and isinstance(merged[-1], str):
        merged[-1] += content
    elif content and merged:
        merged.append(content)
    # Otherwise an empty string is a no-op and, into an empty list, any string is
    # silently lost: LangChain does so, and a fold must give LangChain's result.
    return merged


# --------------------------------------------------------------------------- usage


def add_usage(a: JsonDict | None, b: JsonDict | None) -> JsonDict:
    """Sum two ``usage_metadata`` dicts, recursively; a missing key counts as 0."""
    if not (a or b):
        return {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    if not (a and b):
        return a or b or {}
    return _sum_counts(a, b, _USAGE_ORDER, depth=0)


def _sum_counts(left: JsonDict, right: JsonDict, order: Sequence[str], depth: int) -> JsonDict:
    if depth >= _USAGE_MAX_DEPTH:
        raise ChunkMergeError(
            f"max_depth={_USAGE_MAX_DEPTH} exceeded, unable to combine dicts.",
            lc_error="ValueError",
        )
    summed: JsonDict = {}
    # Declared keys first, then the rest as met: the order pydantic gives LangChain's sum.
    keys = [k for k in order if k in left or k in right]
    keys += [k for k in {**left, **right} if k not in order]
    for key in keys:
        lv, rv = left.get(key, 0), right.get(key, 0)
        if isinstance(lv, int) and isinstance(rv, int):
            summed[key] = lv + rv
        elif isinstance(left.get(key, {}), dict) and isinstance(right.get(key, {}), dict):
            inner_order = _DETAIL_ORDER.get(key, ()) if depth == 0 else ()
            summed[key] = _sum_counts(left.get(key, {}), right.get(key, {}), inner_order, depth + 1)
        else:
            types = [type(d[key]) for d in (left, right) if key in d]
            raise ChunkMergeError(
                f"Unknown value types: {types}. Only dict and int values are supported.",
                lc_error="ValueError",
            )
    return summed


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


def _tool_call_chunk(name: Any, args: Any, id_: Any, index: Any) -> JsonDict:
    return {"name": name, "args": args, "id": id_, "index": index, "type": "tool_call_chunk"}


def _chunks_from_calls(calls: list[JsonDict], invalid: list[JsonDict]) -> list[JsonDict]:
    derived = [_tool_call_chunk(tc["name"], json.dumps(tc["args"]), tc["id"], None) for tc in calls]
    derived += [_tool_call_chunk(tc["name"], tc["args"], tc["id"], None) for tc in invalid]
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
    _require_hashable(call_id)
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
    _require_hashable(kind)
    args_text = block.get("args") or "{}"
    if kind not in _SERVER_CALL_TYPES or not isinstance(args_text, str):
        return None
    try:
        args = json.loads(args_text)  # strict JSON here, unlike the tool-call chunks
    except json.JSONDecodeError:
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
        chunks.append(_tool_call_chunk(name, args, call.get("id"), call.get("index")))
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


# --------------------------------------------------------------------------- chunk +


def _pick_id(ids: Iterable[str | None]) -> str | None:
    """Provider id, else the first ``lc_run-`` id, else the first other ``lc_`` id."""
    best: str | None = None
    best_rank = -1
    for id_ in ids:
        if not id_:
            continue
        if not id_.startswith(_LC_PREFIX):
            return id_
        rank = 1 if id_.startswith(_LC_RUN_PREFIX) else 0
        if rank > best_rank:
            best, best_rank = id_, rank
    return best


def _build_ai_chunk(
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


def _add_ai_chunks(left: AIMessageChunk, right: AIMessageChunk) -> AIMessageChunk:
    content = merge_content(left.content, right.content)
    additional_kwargs = merge_dicts(left.additional_kwargs, right.additional_kwargs)
    response_metadata = merge_dicts(left.response_metadata, right.response_metadata)
    merged_chunks = merge_lists(left.tool_call_chunks, right.tool_call_chunks) or []
    # Only the four ToolCallChunk keys survive a merge; anything else a block carried goes.
    chunks = [
        _tool_call_chunk(c.get("name"), c.get("args"), c.get("id"), c.get("index"))
        for c in merged_chunks
    ]
    usage = None
    if left.usage_metadata or right.usage_metadata is not None:
        usage = add_usage(left.usage_metadata, right.usage_metadata)
    return _build_ai_chunk(
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
        return _build_ai_chunk(id_=left.id, tool_call_chunks=[], **common)
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
