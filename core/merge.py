"""The merge rules under chunk ``+``, as langchain-core 1.8.3 has them.

LangChain sums two message chunks field by field with a handful of helpers: dicts merge
key by key, lists concatenate (merging dict elements that share an ``index``), contents
concatenate or append, ``usage_metadata`` counts add up. They are rules about values,
not messages: :mod:`threadfold.core.chunks` decides which fields of which chunks are summed and
applies these to each, so they live apart from the message classes.

Faithfulness rules over tidiness: where LangChain concatenates equal strings
(``"gpt-4" + "gpt-4"``), drops a string (``[] + "x"``) or refuses a pair, so do we; a
refusal is a :class:`ChunkMergeError` whose ``lc_error`` names LangChain's exception
class.

All functions are pure: inputs are never mutated; results may share unchanged
sub-objects with the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeAlias

from threadfold.core.errors import ChunkMergeError

__all__ = [
    "LC_PREFIX",
    "Content",
    "JsonDict",
    "add_usage",
    "merge_content",
    "merge_dicts",
    "merge_lists",
    "merge_obj",
    "require_hashable",
]

Content: TypeAlias = str | list[Any]
JsonDict: TypeAlias = dict[str, Any]

#: Integer keys that identify or time-stamp a chunk: a later value replaces, never sums.
_LAST_WINS: Final = frozenset({"index", "created", "timestamp"})
#: String keys whose equal values are kept once instead of being concatenated.
_SAME_STR_ONCE: Final = frozenset({"id", "output_version", "model_provider"})
#: LangChain marks the ids and indexes it generates itself with this prefix.
LC_PREFIX: Final = "lc_"
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
        keep = (key == "index" and left.startswith(LC_PREFIX)) or (
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
    return isinstance(index, int) or (isinstance(index, str) and index.startswith(LC_PREFIX))


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
    require_hashable(value)
    return value is None or value == ""


def require_hashable(value: Any) -> None:
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
