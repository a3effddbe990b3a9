"""threadfold.core.chunks and threadfold.core.partial_json: LangChain's chunk ``+``, by table and
by difference.

The tables pin the spec's worked examples (langchain-messages.md §1.4 and §4); the
differential tests fold thousands of seeded random chunk sequences both with
langchain-core's ``+`` and with :func:`threadfold.core.chunks.fold_chunks` and require the same
``model_dump()`` (key order included) or the same refusal.
"""

from __future__ import annotations

import copy
import functools
import json
import operator
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core import messages as lc
from langchain_core.messages.ai import add_usage as lc_add_usage
from langchain_core.messages.base import merge_content as lc_merge_content
from langchain_core.utils._merge import merge_dicts as lc_merge_dicts
from langchain_core.utils.json import parse_partial_json as lc_parse_partial_json

from threadfold.core.ai_chunk import init_tool_calls
from threadfold.core.chunks import add_chunks, fold_chunks
from threadfold.core.errors import ChunkMergeError
from threadfold.core.merge import add_usage, merge_content, merge_dicts, merge_lists, merge_obj
from threadfold.core.messages import (
    CLASS_OF,
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessageChunk,
    FunctionMessageChunk,
    HumanMessageChunk,
    SystemMessageChunk,
    ToolMessageChunk,
)
from threadfold.core.partial_json import parse_partial_json

# --------------------------------------------------------------------------- helpers


def flat(message: BaseMessage) -> dict[str, Any]:
    """Our message in LangChain's ``model_dump()`` shape: fields, ``type``, extras."""
    out = {f: getattr(message, f) for f in message.__struct_fields__ if f != "extra"}
    out["type"] = message.type
    out.update(message.extra)
    return out


def from_flat(dumped: dict[str, Any]) -> BaseMessage:
    """Our Struct holding exactly what a LangChain ``model_dump()`` holds."""
    dumped = copy.deepcopy(dumped)
    cls = CLASS_OF[dumped["type"]]
    names = set(cls.__struct_fields__)
    extra = {k: v for k, v in dumped.items() if k not in names and k != "type"}
    return cls(**{k: v for k, v in dumped.items() if k in names}, extra=extra)


def exact(value: Any) -> Any:
    """A comparable form that also tells key order, int from bool and 1 from 1.0 apart."""
    if isinstance(value, dict):
        return ("dict", [(k, exact(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [exact(v) for v in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def exact_message(dumped: dict[str, Any]) -> dict[str, Any]:
    """Top-level field order differs between pydantic and msgspec; nested order may not."""
    return {k: exact(v) for k, v in dumped.items()}


def tcc(name: Any = None, args: Any = None, id: Any = None, index: Any = None) -> dict[str, Any]:
    """A ToolCallChunk as LangChain stores it."""
    return {"name": name, "args": args, "id": id, "index": index, "type": "tool_call_chunk"}


def ai(content: Any = "", *, chunks: Any = (), **fields: Any) -> AIMessageChunk:
    """An AIMessageChunk with ``tool_calls`` derived from its chunks, as LangChain builds it."""
    content, calls, invalid, chunk_list = init_tool_calls(
        content=content,
        response_metadata=fields.get("response_metadata", {}),
        chunk_position=fields.get("chunk_position"),
        tool_calls=[],
        invalid_tool_calls=[],
        tool_call_chunks=list(chunks),
    )
    return AIMessageChunk(
        content=content,
        tool_calls=calls,
        invalid_tool_calls=invalid,
        tool_call_chunks=chunk_list,
        **fields,
    )


def text(value: str, index: Any = 0) -> dict[str, Any]:
    return {"type": "text", "text": value, "index": index}


# --------------------------------------------------------------------------- worked streams


def test_an_openai_tool_call_stream_folds_into_one_parsed_tool_call() -> None:
    stream = [
        ai(chunks=[tcc("get_weather", "", "call_1", 0)]),
        ai(chunks=[tcc(None, '{"city": "Pa', None, 0)]),
        ai(chunks=[tcc(None, 'ris"}', None, 0)]),
    ]
    total = fold_chunks(stream)
    assert isinstance(total, AIMessageChunk)
    assert total.tool_call_chunks == [tcc("get_weather", '{"city": "Paris"}', "call_1", 0)]
    assert total.tool_calls == [
        {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}
    ]
    assert total.invalid_tool_calls == []


def test_a_half_streamed_tool_call_already_has_its_partial_arguments() -> None:
    stream = [
        ai(chunks=[tcc("get_weather", "", "call_1", 0)]),
        ai(chunks=[tcc(None, '{"ci', None, 0)]),
    ]
    total = fold_chunks(stream)
    assert isinstance(total, AIMessageChunk)
    assert total.tool_calls[0]["args"] == {}
    assert list(total.tool_calls[0]) == ["name", "args", "id", "type"]


def test_a_v1_stream_keeps_provider_keys_single_and_its_last_chunk_promotes_tool_calls() -> None:
    meta = {"output_version": "v1", "model_provider": "openai"}
    block = {"type": "tool_call_chunk", "name": "f", "args": '{"a":', "id": "c1", "index": 0}
    stream = [
        ai([block], chunks=[tcc("f", '{"a":', "c1", 0)], response_metadata=meta),
        ai(
            [{"type": "tool_call_chunk", "args": "1}", "index": 0}],
            chunks=[tcc(None, "1}", None, 0)],
            response_metadata=meta,
            chunk_position="last",
        ),
    ]
    total = fold_chunks(stream)
    assert isinstance(total, AIMessageChunk)
    assert total.response_metadata == meta
    assert total.content == [{"type": "tool_call", "name": "f", "args": {"a": 1}, "id": "c1"}]
    assert total.chunk_position == "last"


def test_server_tool_call_chunks_become_server_tool_calls_on_the_last_v1_chunk() -> None:
    meta = {"output_version": "v1"}
    block = {"type": "server_tool_call_chunk", "id": "s1", "args": '{"q": "x"}'}
    (content, _, _, _) = init_tool_calls(
        content=[block],
        response_metadata=meta,
        chunk_position="last",
        tool_calls=[],
        invalid_tool_calls=[],
        tool_call_chunks=[],
    )
    assert content == [{"type": "server_tool_call", "id": "s1", "args": {"q": "x"}}]
    assert block["type"] == "server_tool_call_chunk"  # the input is not mutated


# --------------------------------------------------------------------------- init_tool_calls


@pytest.mark.parametrize(
    ("args", "parsed"),
    [
        ('{"city": "Pa', {"city": "Pa"}),
        ('{"a":', {}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a":1}trailing', {"a": 1}),
        (None, {}),
        ("", {}),
        ("[1]", None),
        ('"s"', None),
        ("null", None),
        ("xx", None),
    ],
)
def test_chunk_arguments_become_a_tool_call_only_when_they_parse_to_an_object(
    args: str | None, parsed: dict[str, Any] | None
) -> None:
    _, calls, invalid, _ = init_tool_calls(
        content="",
        response_metadata={},
        chunk_position=None,
        tool_calls=[],
        invalid_tool_calls=[],
        tool_call_chunks=[tcc(None, args, "c", 0)],
    )
    if parsed is None:
        assert calls == []
        assert invalid == [
            {"name": None, "args": args, "id": "c", "error": None, "type": "invalid_tool_call"}
        ]
    else:
        assert calls == [{"name": "", "args": parsed, "id": "c", "type": "tool_call"}]
        assert invalid == []


def test_without_chunks_the_chunks_are_derived_from_the_tool_calls() -> None:
    call = {"name": "f", "args": {"a": 1}, "id": "c1", "type": "tool_call"}
    bad = {"type": "invalid_tool_call", "id": "c2", "name": "g", "args": "{", "error": None}
    _, calls, invalid, chunks = init_tool_calls(
        content="",
        response_metadata={},
        chunk_position=None,
        tool_calls=[call],
        invalid_tool_calls=[bad],
        tool_call_chunks=[],
    )
    assert (calls, invalid) == ([call], [bad])
    assert chunks == [tcc("f", '{"a": 1}', "c1"), tcc("g", "{", "c2")]


def test_given_chunks_overwrite_the_tool_calls_passed_alongside() -> None:
    stale = {"name": "old", "args": {}, "id": "x", "type": "tool_call"}
    _, calls, _, _ = init_tool_calls(
        content="",
        response_metadata={},
        chunk_position=None,
        tool_calls=[stale],
        invalid_tool_calls=[],
        tool_call_chunks=[tcc("new", "{}", "y", 0)],
    )
    assert calls == [{"name": "new", "args": {}, "id": "y", "type": "tool_call"}]


# --------------------------------------------------------------------------- merge rules


@pytest.mark.parametrize(
    ("first", "rest", "merged"),
    [
        ("a", ["b"], "ab"),
        (None, ["a"], "a"),
        ("a", [[text("z")]], ["a", text("z")]),
        ("", [["x"]], ["", "x"]),
        (["a"], ["b"], ["ab"]),
        ([text("z")], [""], [text("z")]),
        ([text("z")], ["b"], [text("z"), "b"]),
        ([], ["b"], []),
        ([text("a", 0)], [[text("b", 0)]], [text("ab", 0)]),
        ([text("a", 0)], [[text("b", 1)]], [text("a", 0), text("b", 1)]),
    ],
    ids=[
        "str plus str concatenates",
        "None starts as the empty string",
        "str plus list puts the string first",
        "an empty string still becomes an element",
        "a string joins a trailing string",
        "an empty string is a no-op on a list",
        "a string after a block is a new element",
        "a string into an empty list is dropped",
        "blocks with the same index merge",
        "blocks with different indices stay apart",
    ],
)
def test_merge_content_follows_langchains_rules(first: Any, rest: list[Any], merged: Any) -> None:
    assert merge_content(first, *rest) == merged
    assert merge_content(first, *rest) == lc_merge_content(first, *rest)


@pytest.mark.parametrize(
    ("left", "right", "merged"),
    [
        ({"a": None}, {"a": "x"}, {"a": "x"}),
        ({"a": "x"}, {"a": None}, {"a": "x"}),
        ({"model_name": "gpt-4"}, {"model_name": "gpt-4"}, {"model_name": "gpt-4gpt-4"}),
        ({"type": "text"}, {"type": "text"}, {"type": "texttext"}),
        ({"id": "x"}, {"id": "x"}, {"id": "x"}),
        ({"model_provider": "openai"}, {"model_provider": "openai"}, {"model_provider": "openai"}),
        ({"index": "lc_1"}, {"index": "lc_2"}, {"index": "lc_1"}),
        ({"n": 1}, {"n": 1}, {"n": 1}),
        ({"n": 1}, {"n": 2}, {"n": 3}),
        ({"index": 1}, {"index": 2}, {"index": 2}),
        ({"created": 5}, {"created": 7}, {"created": 7}),
        ({"flag": True}, {"flag": True}, {"flag": True}),
        ({"d": {"a": "x"}}, {"d": {"a": "y", "b": 1}}, {"d": {"a": "xy", "b": 1}}),
        ({"l": [1]}, {"l": [2]}, {"l": [1, 2]}),
    ],
    ids=[
        "None yields to a value",
        "a None value keeps the left",
        "equal strings still concatenate",
        "even the type key concatenates",
        "equal ids are kept once",
        "equal providers are kept once",
        "an lc_ index is kept",
        "equal ints are not summed",
        "unequal ints are summed",
        "index takes the last value",
        "created takes the last value",
        "equal bools are kept",
        "dicts merge recursively",
        "lists merge",
    ],
)
def test_merge_dicts_follows_langchains_rules(
    left: dict[str, Any], right: dict[str, Any], merged: dict[str, Any]
) -> None:
    assert merge_dicts(left, right) == merged
    assert merge_dicts(left, right) == lc_merge_dicts(left, right)


@pytest.mark.parametrize(
    ("left", "right", "message"),
    [
        ({"k": 1}, {"k": "1"}, 'additional_kwargs["k"] already exists in this message,'),
        ({"k": 1}, {"k": True}, 'additional_kwargs["k"] already exists in this message,'),
        ({"b": True}, {"b": False}, "Additional kwargs key b already exists in left dict"),
        ({"f": 0.5}, {"f": 1.5}, "value has unsupported type <class 'float'>."),
    ],
    ids=["int vs str", "int vs bool", "unequal bools", "unequal floats"],
)
def test_merge_dicts_refuses_what_langchain_refuses(
    left: dict[str, Any], right: dict[str, Any], message: str
) -> None:
    with pytest.raises(ChunkMergeError) as caught:
        merge_dicts(left, right)
    assert caught.value.lc_error == "TypeError"
    assert message in str(caught.value)
    with pytest.raises(TypeError, match=message.replace("[", r"\[").replace(".", r"\.")):
        lc_merge_dicts(left, right)


def test_merge_lists_skips_none_and_keeps_none_for_none() -> None:
    assert merge_lists(None, None) is None
    assert merge_lists(None, [1], None, [2]) == [1, 2]


def test_a_non_standard_block_merges_into_a_typed_block_as_extras() -> None:
    left = [{"type": "text", "text": "a", "index": 0}]
    right = [{"type": "non_standard", "value": {"type": "x", "k": 1}, "index": 0}]
    assert merge_lists(left, right) == [
        {"type": "text", "text": "a", "index": 0, "extras": {"k": 1}}
    ]


def test_merge_obj_concatenates_merges_or_keeps_equal_values_and_refuses_the_rest() -> None:
    assert merge_obj(None, 1) == 1
    assert merge_obj("a", "b") == "ab"
    assert merge_obj({"a": [1]}, {"a": [2]}) == {"a": [1, 2]}
    assert merge_obj(3, 3) == 3
    with pytest.raises(ChunkMergeError, match="Unable to merge left=1 and right=2") as caught:
        merge_obj(1, 2)
    assert caught.value.lc_error == "ValueError"
    with pytest.raises(ChunkMergeError, match="different types") as caught:
        merge_obj(1, "1")
    assert caught.value.lc_error == "TypeError"


def test_usage_is_summed_recursively_with_missing_keys_counted_as_zero() -> None:
    left = {"input_tokens": 5, "output_tokens": 0, "total_tokens": 5,
            "input_token_details": {"cache_read": 3}}  # fmt: skip
    right = {"input_tokens": 0, "output_tokens": 10, "total_tokens": 10,
             "output_token_details": {"reasoning": 4}}  # fmt: skip
    expected = {
        "input_tokens": 5,
        "output_tokens": 10,
        "total_tokens": 15,
        "input_token_details": {"cache_read": 3},
        "output_token_details": {"reasoning": 4},
    }
    assert exact(add_usage(left, right)) == exact(expected)
    assert add_usage(None, None) == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    assert add_usage(left, None) is left
    assert add_usage(left, right) == lc_add_usage(left, right)  # type: ignore[arg-type]


def test_usage_with_a_value_that_is_neither_int_nor_dict_is_refused() -> None:
    left = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "cost": 0.5}
    with pytest.raises(ChunkMergeError) as caught:
        add_usage(left, {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2})
    assert str(caught.value) == (
        "Unknown value types: [<class 'float'>]. Only dict and int values are supported."
    )
    assert caught.value.lc_error == "ValueError"


# --------------------------------------------------------------------------- chunk +


def test_the_first_provider_id_wins_then_lc_run_then_other_lc_ids() -> None:
    def folded_id(*ids: str | None) -> str | None:
        return fold_chunks([ai("", id=i) for i in ids]).id

    assert folded_id("lc_1", "lc_run-a", "chatcmpl-1", "chatcmpl-2") == "chatcmpl-1"
    assert folded_id("lc_1", "lc_run-a", "lc_run-b") == "lc_run-a"
    assert folded_id(None, "", "lc_2", "lc_3") == "lc_2"


def test_chunk_position_last_is_sticky_and_usage_sums() -> None:
    usage = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    total = fold_chunks(
        [
            ai("a", usage_metadata=usage),
            ai("b", chunk_position="last"),
            ai("c", usage_metadata=usage),
        ]
    )
    assert isinstance(total, AIMessageChunk)
    assert total.chunk_position == "last"
    assert total.usage_metadata == {"input_tokens": 2, "output_tokens": 4, "total_tokens": 6}


def test_addition_drops_name_and_extra_fields_but_a_function_chunk_keeps_its_name() -> None:
    left = HumanMessageChunk(content="a", name="bob", id="1", extra={"example": True})
    total = add_chunks(left, HumanMessageChunk(content="b", id="2"))
    assert total == HumanMessageChunk(content="ab", id="1")
    fn = FunctionMessageChunk(content="a", name="f", extra={"x": 1})
    assert add_chunks(fn, FunctionMessageChunk(content="b", name="f")) == FunctionMessageChunk(
        content="ab", name="f"
    )


def test_an_ai_chunk_plus_another_kind_of_chunk_keeps_only_the_common_fields() -> None:
    usage = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    left = ai("a", chunks=[tcc("f", "{}", "c", 0)], usage_metadata=usage, chunk_position="last")
    assert add_chunks(left, SystemMessageChunk(content="b")) == AIMessageChunk(content="ab")


def test_a_tool_chunk_sum_merges_artifacts_and_keeps_an_error_status() -> None:
    left = ToolMessageChunk(content="a", tool_call_id="t", artifact={"k": "x"}, id="1")
    right = ToolMessageChunk(content="b", tool_call_id="t", artifact={"k": "y"}, status="error")
    assert add_chunks(left, right) == ToolMessageChunk(
        content="ab", tool_call_id="t", artifact={"k": "xy"}, id="1", status="error"
    )


def test_a_chat_chunk_keeps_its_role_whatever_chunk_is_added() -> None:
    total = add_chunks(ChatMessageChunk(content="a", role="bot"), HumanMessageChunk(content="b"))
    assert total == ChatMessageChunk(content="ab", role="bot")


@pytest.mark.parametrize(
    ("left", "right", "lc_error", "message"),
    [
        (
            ToolMessageChunk(content="", tool_call_id="a"),
            ToolMessageChunk(content="", tool_call_id="b"),
            "ValueError",
            "Cannot concatenate ToolMessageChunks with different names.",
        ),
        (
            ToolMessageChunk(content="", tool_call_id="a"),
            HumanMessageChunk(content=""),
            "KeyError",
            "'tool_call_id'",
        ),
        (
            ChatMessageChunk(content="", role="a"),
            ChatMessageChunk(content="", role="b"),
            "ValueError",
            "Cannot concatenate ChatMessageChunks with different roles.",
        ),
        (
            FunctionMessageChunk(content="", name="f"),
            FunctionMessageChunk(content="", name="g"),
            "ValueError",
            "Cannot concatenate FunctionMessageChunks with different names.",
        ),
        (
            FunctionMessageChunk(content="", name="f"),
            HumanMessageChunk(content=""),
            "ValidationError",
            "1 validation error for FunctionMessageChunk\nname\n  Field required",
        ),
        (
            AIMessageChunk(content=""),
            AIMessage(content=""),
            "TypeError",
            'unsupported operand type(s) for +: "AIMessageChunk" and "AIMessage"',
        ),
    ],
    ids=[
        "tool chunks with different tool_call_ids",
        "a tool chunk plus another kind",
        "chat chunks with different roles",
        "function chunks with different names",
        "a function chunk plus another kind",
        "a chunk plus a non-chunk",
    ],
)
def test_pairs_langchain_cannot_add_are_refused_with_its_exception_class(
    left: BaseMessage, right: BaseMessage, lc_error: str, message: str
) -> None:
    with pytest.raises(ChunkMergeError) as caught:
        add_chunks(left, right)
    assert caught.value.lc_error == lc_error
    assert str(caught.value) == message


def test_a_fold_of_nothing_is_refused_and_a_fold_of_one_is_that_message() -> None:
    with pytest.raises(ChunkMergeError):
        fold_chunks([])
    only = HumanMessageChunk(content="x")
    assert fold_chunks([only]) is only


# --------------------------------------------------------------------------- non-associativity

_P = "tool_call_chunks"
CE: list[tuple[str, list[AIMessageChunk], Callable[[AIMessageChunk], Any], Any, Any]] = [
    ("CE1", [ai("x"), ai("y"), ai([text("z")])], lambda m: m.content,
     ["xy", text("z")], ["x", "y", text("z")]),
    ("CE2", [ai([text("a", 0)]), ai(""), ai([text("b", 1)])], lambda m: m.content,
     [text("a", 0), text("b", 1)], [text("a", 0), "", text("b", 1)]),
    ("CE3", [ai("x"), ai([]), ai("y")], lambda m: m.content, ["xy"], ["x"]),
    ("CE4", [ai(response_metadata={"id": "x"}), ai(response_metadata={"id": "y"}),
             ai(response_metadata={"id": "y"})],
     lambda m: m.response_metadata["id"], "xyy", "xy"),
    ("CE5", [ai(additional_kwargs={"n": 1}), ai(additional_kwargs={"n": 1}),
             ai(additional_kwargs={"n": 2})],
     lambda m: m.additional_kwargs["n"], 3, 4),
    ("CE6", [ai(chunks=[tcc(None, "A", "p", 0)]), ai(chunks=[tcc(None, "B", "q", 0)]),
             ai(chunks=[tcc(None, "C", None, 0)])],
     lambda m: [(c["id"], c["args"]) for c in m.tool_call_chunks],
     [("p", "AC"), ("q", "B")], [("p", "A"), ("q", "BC")]),
    ("CE7", [ai([]), ai([text("x"), text("y")]), ai([text("z")])],
     lambda m: [b["text"] for b in list(m.content)], ["xyz"], ["xzy"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("chunks", "project", "left_fold", "right_grouped"),
    [case[1:] for case in CE],
    ids=[case[0] for case in CE],
)
def test_a_fold_gives_langchains_left_fold_result_where_regrouping_would_differ(
    chunks: list[AIMessageChunk],
    project: Callable[[AIMessageChunk], Any],
    left_fold: Any,
    right_grouped: Any,
) -> None:
    a, b, c = chunks
    folded = fold_chunks(chunks)
    regrouped = add_chunks(a, add_chunks(b, c))
    assert isinstance(folded, AIMessageChunk)
    assert isinstance(regrouped, AIMessageChunk)
    assert project(folded) == left_fold
    assert project(regrouped) == right_grouped


# --------------------------------------------------------------------------- partial JSON


@pytest.mark.parametrize(
    ("text_", "value"),
    [
        ('{"city": "Pa', {"city": "Pa"}),
        ('{"a":', {}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a":1}trailing', {"a": 1}),
        ("[1]", [1]),
        ('"s"', "s"),
        ("null", None),
        ('{"a": 1]', None),
        ('"abc\\', "abc"),
        ('{"a": "x\ny', {"a": "x\ny"}),
        ("12a", 12),
        ('{"a": "b"} {"c"', {"a": "b"}),
    ],
    ids=[
        "an open string is closed",
        "a key without a value is dropped",
        "open brackets close in reverse order",
        "trailing text after a document is ignored",
        "a list",
        "a string",
        "null",
        "a mismatched bracket gives None",
        "a dangling escape is dropped",
        "a raw newline in a string is escaped",
        "a number before junk",
        "the first document of two",
    ],
)
def test_partial_json_completes_a_truncated_document(text_: str, value: Any) -> None:
    assert exact(parse_partial_json(text_)) == exact(value)


@pytest.mark.parametrize("text_", ["", "xx", "-", "tru e"])
def test_partial_json_raises_the_decoders_error_when_nothing_parses(text_: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_partial_json(text_)


def test_strict_partial_json_refuses_control_characters_in_strings() -> None:
    assert parse_partial_json('"a\tb"') == "a\tb"
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        parse_partial_json('"a\tb"', strict=True)


# --------------------------------------------------------------------------- differential


def _outcome(parse: Callable[..., Any], text_: str, strict: bool) -> Any:
    try:
        return ("ok", exact(parse(text_, strict=strict)))
    except json.JSONDecodeError as exc:
        return ("error", exc.msg, exc.pos)


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.45:
        return rng.choice(
            [0, -12, 3.25, 1e21, True, False, None, "", "a b", 'q"uote', "back\\slash",
             "new\nline", "tab\there", "é☃", "\u2028", "{[", "]}"]
        )  # fmt: skip
    if roll < 0.75:
        return {rng.choice("abcxyz") * rng.randint(1, 3): _json_value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}  # fmt: skip
    return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _json_text(rng: random.Random) -> str:
    text_ = json.dumps(
        _json_value(rng),
        indent=rng.choice([None, None, 1]),
        ensure_ascii=rng.random() < 0.5,
        separators=rng.choice([None, (",", ":")]),
    )
    if rng.random() < 0.3:
        text_ = text_.replace("\\n", "\n").replace("\\t", "\t")  # raw control characters
    if rng.random() < 0.15 and text_:
        at = rng.randrange(len(text_))
        text_ = text_[:at] + rng.choice('"\\{}[],: x1') + text_[at:]
    return text_


@pytest.mark.differential
def test_partial_json_agrees_with_langchain_on_random_prefixes() -> None:
    rng = random.Random(20240611)
    compared, mismatches = 0, []
    while compared < 6000:
        doc = _json_text(rng)
        for cut in sorted({rng.randint(0, len(doc)) for _ in range(4)}):
            strict = rng.random() < 0.3
            ours = _outcome(parse_partial_json, doc[:cut], strict)
            theirs = _outcome(lc_parse_partial_json, doc[:cut], strict)
            compared += 1
            if ours != theirs:
                mismatches.append((doc[:cut], strict, ours, theirs))
    assert mismatches == []


# Random chunk sequences. The pools are small on purpose: collisions (equal indices,
# equal keys with different types, ids in both forms) are where the rules differ.

_IDS = [None, "", "run-1", "chatcmpl-9", "lc_run-a", "lc_run-b", "lc_1", "lc_2"]
_TEXTS = ["", "a", "b", "xy", " ", "\n"]
_ARGS = ["", '{"', 'a": ', "1", ', "b": [1, ', '2]}', '"x', "}", "null", "[1]",
         '{"a": "p\nq"}', "\\", None, '{"c": tru', "e}"]  # fmt: skip
_INDICES = [None, 0, 0, 1, 2, "lc_0", "lc_1", "x"]


def _maybe(rng: random.Random, out: dict[str, Any], key: str, pool: list[Any], p: float) -> None:
    if rng.random() < p:
        out[key] = rng.choice(pool)


def _block(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(_TEXTS)
    block: dict[str, Any]
    if roll < 0.55:
        block = {"type": "text", "text": rng.choice(_TEXTS)}
    elif roll < 0.7:
        block = {"type": "tool_call_chunk", "name": rng.choice([None, "f"]),
                 "args": rng.choice(_ARGS), "id": rng.choice([None, "c1", "c2"])}  # fmt: skip
        _maybe(rng, block, "extras", [{"k": 1}, {"k": "v"}], 0.3)
    elif roll < 0.8:
        kind = rng.choice(["server_tool_call_chunk", "server_tool_call"])
        args = rng.choice(['{"q": "x"}', '{"q"', "", "[1]", None])
        block = {"type": kind, "id": "s1", "args": args}
    elif roll < 0.9:
        block = {"type": "non_standard", "value": rng.choice([{"type": "v", "k": "a"}, {"k": 1}])}
    else:
        block = {"type": "reasoning", "reasoning": rng.choice(_TEXTS)}
    _maybe(rng, block, "index", _INDICES, 0.8)
    _maybe(rng, block, "id", [None, "", "b1", "b2"], 0.2)
    return block


def _content(rng: random.Random) -> Any:
    if rng.random() < 0.5:
        return rng.choice(_TEXTS)
    return [_block(rng) for _ in range(rng.randint(0, 3))]


def _raw_tool_calls(rng: random.Random) -> list[Any]:
    call: dict[str, Any] = {"type": "function"}
    _maybe(rng, call, "index", [0, 1, "1", None, "x", 1.0], 0.9)
    _maybe(rng, call, "id", ["call_1", None, 5], 0.8)
    functions = [{"name": "f", "arguments": rng.choice(_ARGS)}, {"name": None, "arguments": "{}"},
                 {"arguments": "{}"}, {"name": "f"}, "bad"]  # fmt: skip
    _maybe(rng, call, "function", functions, 0.9)
    return [call]


def _additional_kwargs(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _maybe(rng, out, "n", [0, 1, 1, 2, 5], 0.3)
    _maybe(rng, out, "s", ["a", "b"], 0.3)
    _maybe(rng, out, "refusal", [None, "no"], 0.2)
    _maybe(rng, out, "b", [True, True, True, False], 0.05)
    _maybe(rng, out, "f", [0.5, 0.5, 0.5, 1.5], 0.05)
    _maybe(rng, out, "mixed", [1, 1, 1, 1, "1"], 0.05)
    _maybe(rng, out, "nested", [{"k": 1}, {"k": "v"}, {"k": None}, {"j": [1]}], 0.2)
    _maybe(rng, out, "created", [1, 2], 0.1)
    if rng.random() < 0.2:
        out["lst"] = [_block(rng) for _ in range(rng.randint(0, 2))]
    if rng.random() < 0.06:
        out["tool_calls"] = _raw_tool_calls(rng)
    return out


def _response_metadata(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _maybe(rng, out, "model_name", ["gpt-4"], 0.2)
    _maybe(rng, out, "model_provider", ["openai"], 0.3)
    _maybe(rng, out, "output_version", ["v1", "v1", "v0"], 0.4)
    _maybe(rng, out, "finish_reason", [None, "stop"], 0.2)
    _maybe(rng, out, "id", ["x", "y"], 0.1)
    _maybe(rng, out, "created", [1, 2], 0.1)
    _maybe(rng, out, "score", [0.5, 0.5, 0.5, 0.7], 0.03)
    return out


def _usage(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.6:
        return None
    i, o = rng.randint(0, 9), rng.randint(0, 9)
    usage: dict[str, Any] = {"total_tokens": i + o, "output_tokens": o, "input_tokens": i}
    if rng.random() < 0.3:
        usage["input_token_details"] = rng.choice([{"cache_read": 1}, {"audio": 2, "zz": 1}])
    if rng.random() < 0.3:
        usage["output_token_details"] = {"reasoning": rng.randint(0, 3)}
    _maybe(rng, usage, "cost", [1, 2, 2, 0.5], 0.1)
    return usage


def _common(rng: random.Random) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "content": _content(rng),
        "additional_kwargs": _additional_kwargs(rng),
        "response_metadata": _response_metadata(rng),
        "id": rng.choice(_IDS),
    }
    _maybe(rng, kwargs, "name", ["bob"], 0.1)
    _maybe(rng, kwargs, "example", [True, 1], 0.05)  # an extra field
    return kwargs


def _ai_kwargs(rng: random.Random) -> dict[str, Any]:
    kwargs = _common(rng)
    chunks = []
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        chunks.append(
            {"name": rng.choice([None, "f", "g", ""]), "args": rng.choice(_ARGS),
             "id": rng.choice([None, "", "c1", "c2"]), "index": rng.choice([None, 0, 0, 1])}
        )  # fmt: skip
    kwargs["tool_call_chunks"] = chunks
    kwargs["usage_metadata"] = _usage(rng)
    kwargs["chunk_position"] = "last" if rng.random() < 0.15 else None
    return kwargs


_OTHER_KINDS: dict[str, tuple[Any, Callable[[random.Random], dict[str, Any]]]] = {
    "human": (lc.HumanMessageChunk, lambda r: {}),
    "system": (lc.SystemMessageChunk, lambda r: {}),
    "ai": (lc.AIMessageChunk, _ai_kwargs),
    "tool": (lc.ToolMessageChunk, lambda r: {
        "tool_call_id": r.choice(["t1", "t1", "t2"]),
        "artifact": r.choice([None, "a", {"k": "v"}, [1], 1, 1, 2, {"k": 1}]),
        "status": r.choice(["success", "error"])}),
    "chat": (lc.ChatMessageChunk, lambda r: {"role": r.choice(["user", "user", "bot"])}),
    "function": (lc.FunctionMessageChunk, lambda r: {"name": r.choice(["f", "f", "g"])}),
    "human message": (lc.HumanMessage, lambda r: {}),
    "ai message": (lc.AIMessage, lambda r: {}),
    "tool message": (lc.ToolMessage, lambda r: {"tool_call_id": "t1"}),
}  # fmt: skip


def _lc_message(rng: random.Random, kind: str) -> Any:
    """A LangChain message of ``kind``, regenerated until LangChain accepts its input."""
    cls, specific = _OTHER_KINDS[kind]
    while True:
        kwargs = _ai_kwargs(rng) if kind == "ai" else _common(rng) | specific(rng)
        try:
            return cls(**copy.deepcopy(kwargs))
        except Exception:  # LangChain refused the input: draw again
            continue


def _v1_stream(rng: random.Random) -> list[Any]:
    """A v1-style stream: tool-call blocks in content mirror the chunks; last one is marked."""
    meta = {"output_version": "v1", "model_provider": "openai"}
    stream = []
    length = rng.randint(1, 4)
    for i in range(length):
        index = rng.choice([0, 0, 1])
        call_id = rng.choice(["c1", "c2"]) if i == 0 or rng.random() < 0.2 else None
        chunk = {"name": "f" if call_id else None, "args": rng.choice(_ARGS), "id": call_id,
                 "index": index}  # fmt: skip
        block = {"type": "tool_call_chunk", **chunk}
        _maybe(rng, block, "extras", [{"k": 1}, {"k": 2}], 0.3)
        content: list[Any] = [block]
        if rng.random() < 0.4:
            content.insert(rng.randint(0, 1), _block(rng))
        last = "last" if i == length - 1 and rng.random() < 0.8 else None
        stream.append(
            _A(content=content, tool_call_chunks=[chunk],
               response_metadata=dict(meta), chunk_position=last)
        )  # fmt: skip
    return stream


def _ai_sequence(rng: random.Random) -> list[Any]:
    if rng.random() < 0.2:
        return _v1_stream(rng)
    return [_lc_message(rng, "ai") for _ in range(rng.choice([1, 2, 2, 3, 3, 4, 5]))]


def _mixed_sequence(rng: random.Random) -> list[Any]:
    chunk_kinds = ["human", "system", "ai", "tool", "tool", "chat", "chat", "function"]
    left = rng.choice(chunk_kinds)
    same = rng.random() < 0.5
    rights = []
    for _ in range(rng.choice([1, 1, 2])):
        if same:
            rights.append(left)
        else:
            rights.append(rng.choice([*chunk_kinds, "human message", "ai message", "tool message"]))
    return [_lc_message(rng, k) for k in [left, *rights]]


def _compare_fold(lc_messages: list[Any]) -> str | None:
    """None when our fold agrees with LangChain's, else a description of the difference."""
    ours_in = [from_flat(m.model_dump()) for m in lc_messages]
    before = [exact_message(flat(m)) for m in ours_in]
    try:
        theirs: Any = functools.reduce(operator.add, lc_messages)
        lc_error = None
    except Exception as exc:  # any LangChain refusal is a result to match
        lc_error = exc
    try:
        ours: Any = fold_chunks(ours_in)
        our_error = None
    except ChunkMergeError as exc:
        our_error = exc
    if [exact_message(flat(m)) for m in ours_in] != before:
        return "our fold mutated its inputs"
    if lc_error is not None or our_error is not None:
        return _compare_errors(lc_error, our_error)
    if exact_message(flat(ours)) != exact_message(theirs.model_dump()):
        return f"results differ:\n ours   {flat(ours)}\n theirs {theirs.model_dump()}"
    return None


def _compare_errors(lc_error: Exception | None, our_error: ChunkMergeError | None) -> str | None:
    if lc_error is None or our_error is None:
        return f"only one side refused: ours {our_error!r}, theirs {lc_error!r}"
    name = type(lc_error).__name__
    if our_error.lc_error != name:
        return f"refused differently: ours {our_error.lc_error}, theirs {name}: {lc_error}"
    if str(our_error) != _without_pydantic_details(str(lc_error)):
        return f"messages differ: ours {our_error}, theirs {lc_error}"
    return None


def _without_pydantic_details(message: str) -> str:
    """A ValidationError's text without the input echo and documentation links."""
    lines = message.splitlines()
    kept = [re.sub(r" \[type=.*$", "", line) for line in lines if "errors.pydantic.dev" not in line]
    return "\n".join(kept)


# Typed as Any: these build LangChain's inputs, whose exact types are LangChain's concern.
_A: Any = lc.AIMessageChunk
_H: Any = lc.HumanMessageChunk
_V1_LAST: dict[str, Any] = {"response_metadata": {"output_version": "v1"}, "chunk_position": "last"}
_HALF_CALL = {"tool_calls": [{"index": 0, "function": {"name": "f"}}]}
EDGES: list[tuple[str, Callable[[], list[Any]]]] = [
    ("raw OpenAI calls that only parse once merged become chunks", lambda: [
        _A(content="", additional_kwargs=_HALF_CALL),
        _A(content="", additional_kwargs={
            "tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1}'}}]})]),
    ("raw OpenAI calls that merge into a wrong type are a ValidationError", lambda: [
        _A(content="", additional_kwargs=_HALF_CALL),
        _A(content="", additional_kwargs={
            "tool_calls": [{"index": 0, "function": {"arguments": 5}}]})]),
    ("raw OpenAI calls with a string index are coerced like pydantic", lambda: [
        _A(content="", additional_kwargs={"tool_calls": [
            {"index": " 1_0", "id": "c", "function": {"name": "f", "arguments": "{}"}}]}),
        _H(content="x")]),
    ("an ai chunk plus a human chunk re-derives chunks from raw calls", lambda: [
        _A(content="", additional_kwargs={"tool_calls": [
            {"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"a"'}}]}),
        _H(content="x")]),
    ("repeated tool-call ids share the last block's extras", lambda: [
        _A(content=[
            {"type": "tool_call_chunk", "id": "c1", "args": "{}", "extras": {"k": 1}},
            {"type": "tool_call_chunk", "id": "c1", "args": "{}"},
            {"type": "tool_call_chunk", "id": "c1", "args": "{}", "extras": {"k": 2}},
            {"type": "tool_call_chunk", "id": "c2", "args": "{}"}],
           tool_call_chunks=[{"name": "f", "args": "{}", "id": "c1", "index": 0},
                             {"name": "g", "args": "{", "id": "c1", "index": 1}]),
        _A(content="", **_V1_LAST)]),
    ("an unhashable block type fails the server-call promotion", lambda: [
        _A(content=[{"type": ["x"], "args": "{}"}]), _A(content="", **_V1_LAST)]),
    ("an unhashable tool-call block id fails the promotion", lambda: [
        _A(content=[{"type": "tool_call_chunk", "id": ["x"]}],
           tool_call_chunks=[{"name": "f", "args": "", "id": "c", "index": 0}]),
        _A(content="", **_V1_LAST)]),
    ("an unhashable block id fails the index match", lambda: [
        _A(content=[{"type": "text", "text": "a", "index": 0, "id": [1]}]),
        _A(content=[{"type": "text", "text": "b", "index": 0}])]),
    ("a bool index matches an int index and then clashes with it", lambda: [
        _A(content=[{"type": "text", "text": "a", "index": 1}]),
        _A(content=[{"type": "text", "text": "b", "index": True}])]),
    ("a non_standard value that is not an object cannot become extras", lambda: [
        _A(content=[{"type": "text", "text": "a", "index": 0}]),
        _A(content=[{"type": "non_standard", "value": "s", "index": 0}])]),
    ("non_standard blocks merge their values", lambda: [
        _A(content=[{"type": "non_standard", "value": {"a": "x"}, "index": 0}]),
        _A(content=[{"type": "non_standard", "value": {"type": "t", "a": "y"}, "index": 0}])]),
    ("a one-sided float in usage is refused", lambda: [
        _A(content="", usage_metadata={"input_tokens": 1, "output_tokens": 1,
                                       "total_tokens": 2, "cost": 0.5}),
        _A(content="", usage_metadata={"input_tokens": 1, "output_tokens": 1,
                                       "total_tokens": 2})]),
]  # fmt: skip


@pytest.mark.differential
@pytest.mark.parametrize("make", [make for _, make in EDGES], ids=[name for name, _ in EDGES])
def test_hand_picked_edge_cases_match_langchain(make: Callable[[], list[Any]]) -> None:
    assert _compare_fold(make()) is None


def _run_differential(make: Callable[[random.Random], list[Any]], seed: int, n: int) -> None:
    rng = random.Random(seed)
    mismatches = []
    for case in range(n):
        sequence = make(rng)
        problem = _compare_fold(sequence)
        if problem is not None:
            mismatches.append((case, [m.model_dump() for m in sequence], problem))
    assert mismatches[:3] == []


@pytest.mark.differential
def test_folding_random_ai_chunk_streams_matches_langchains_left_fold() -> None:
    _run_differential(_ai_sequence, seed=7, n=4000)


@pytest.mark.differential
def test_adding_random_pairs_of_other_chunks_matches_langchain() -> None:
    _run_differential(_mixed_sequence, seed=11, n=2500)
